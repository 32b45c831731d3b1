"""Sign codes: the word-major layout and the Hamming scan both dense indexes use."""

from __future__ import annotations

import types

import numpy as np
import pytest

from agentctx.retrieval.codes import closest, hamming, sign_words, word_columns
from agentctx.retrieval.dense import sign_code


@pytest.mark.parametrize("dimensions", [384, 100, 8])
def test_sign_code_scan_matches_a_plain_hamming_distance(dimensions: int) -> None:
    rng = np.random.default_rng(dimensions)
    matrix = rng.standard_normal((3000, dimensions)).astype(np.float32)
    query = rng.standard_normal(dimensions).astype(np.float32)
    distances = hamming(np, sign_words(np, matrix), sign_words(np, np.asarray([query]))[:, 0])
    plain = ((matrix > 0) != (query > 0)).sum(axis=1)
    assert distances.tolist() == plain.tolist()
    for take in (1, 50, 400, 3000, 5000):
        chosen = closest(np, distances, take)
        assert len(chosen) == min(take, 3000) == len(set(chosen.tolist()))
        # Nothing left out is nearer than anything taken.
        left = np.setdiff1d(np.arange(3000), chosen)
        if len(left):
            assert distances[chosen].max() <= distances[left].min()


@pytest.mark.parametrize("dimensions", [384, 100, 12])
def test_stored_byte_codes_give_the_same_words_as_the_vectors(dimensions: int) -> None:
    """The session index stores ``sign_code`` bytes; the memory index codes vectors
    directly: both layouts must agree bit for bit."""
    rng = np.random.default_rng(dimensions + 1)
    matrix = rng.standard_normal((50, dimensions)).astype(np.float32)
    stored = np.frombuffer(b"".join(sign_code(row.tolist()) for row in matrix), dtype=np.uint8)
    words = word_columns(np, stored.reshape(len(matrix), -1))
    assert words.dtype == np.uint64 and words.shape == (-(-dimensions // 64), 50)
    assert (words == sign_words(np, matrix)).all()


def test_the_scan_counts_the_same_without_bitwise_count() -> None:
    """numpy < 2 has no ``bitwise_count``: the byte table must give the same distances."""
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((500, 200)).astype(np.float32)
    codes = sign_words(np, matrix)
    query = sign_words(np, matrix[:1])[:, 0]
    old_numpy = types.SimpleNamespace(
        **{name: getattr(np, name) for name in dir(np) if name != "bitwise_count"}
    )
    assert not hasattr(old_numpy, "bitwise_count")
    assert hamming(old_numpy, codes, query).tolist() == hamming(np, codes, query).tolist()
    assert hamming(np, codes, query)[0] == 0
