"""A deterministic embedder with no dependencies: signed feature hashing.

Each text's index terms (stemmed words without stopwords, CJK character bigrams;
see :mod:`agentctx.retrieval.terms`) and each pair of neighbouring terms are
hashed into ``dimensions`` buckets with a hash-derived sign, weighted by
``1 + log(count)``, and the vector is L2-normalized. Texts sharing words land
near each other; synonyms do not, so it is far weaker than a trained model, but it
never fails and needs nothing installed.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import Counter
from collections.abc import Sequence

from agentctx.errors import ConfigError
from agentctx.llm.embeddings import l2_normalize
from agentctx.retrieval.terms import document_terms

VERSION = 1  # part of the name: a change to the features must not mix with stored vectors


class HashingEmbedder:
    """Feature hashing of word unigrams and bigrams and CJK bigrams into signed buckets."""

    def __init__(self, dimensions: int = 384) -> None:
        if not 8 <= dimensions <= 8192:
            raise ConfigError(f"hashing embedder dimensions must be 8..8192, got {dimensions}")
        self._dimensions = dimensions

    @property
    def name(self) -> str:
        """``hashing-v1-<dimensions>``."""
        return f"hashing-v{VERSION}-{self._dimensions}"

    @property
    def dimensions(self) -> int:
        """The vector size."""
        return self._dimensions

    def _features(self, text: str) -> Counter[str]:
        terms = document_terms(text)
        features = Counter(terms)
        features.update(f"{a} {b}" for a, b in itertools.pairwise(terms))
        return features

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text (all zeros for a text with no terms)."""
        vectors = []
        for text in texts:
            vector = [0.0] * self._dimensions
            for feature, count in self._features(text).items():
                digest = int.from_bytes(
                    hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little"
                )
                sign = 1.0 if digest & 1 else -1.0
                vector[(digest >> 1) % self._dimensions] += sign * (1.0 + math.log(count))
            vectors.append(l2_normalize(vector))
        return vectors
