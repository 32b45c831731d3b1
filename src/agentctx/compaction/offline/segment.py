"""Topic boundaries in a conversation, TextTiling-style (Hearst, 1997).

Messages play the part of TextTiling's token sequences:

1. **Cohesion.** At every gap between two messages, the ``block`` messages before it
   and the ``block`` after it are compared: cosine of their summed TF-IDF term
   vectors (index terms of :mod:`agentctx.retrieval.terms`; sublinear term
   frequency, IDF over the messages). Near the ends the blocks are shorter. With an
   :class:`~agentctx.llm.Embedder`, the cosine of the blocks' summed message
   embeddings is blended in (``embedding_weight``), less the mean cosine of two
   messages of the conversation (what all of them share is no topic). Each series
   is divided by its maximum before blending, so neither dominates by scale.
2. **Depth.** From each gap the score climbs to the highest point on its left and
   on its right; the depth is the sum of both climbs. Only valleys (gaps no more
   cohesive than their neighbours; the middle gap of a flat bottom) can be
   boundaries.
3. **Cut-off.** A valley is a boundary when its depth reaches Hearst's liberal
   cut-off, mean - std/2 of the valley depths, *and* the cohesion at the gap has
   fallen to at most ``1 - threshold`` of its peaks' mean (depth >= ``threshold``
   x the sum of the peaks). The second test is what keeps a one-topic
   conversation in one piece: Hearst's cut-off is relative, so alone it always
   finds some boundary.
4. **Merge.** A segment shorter than ``min_segment`` loses its shallower boundary
   (its only one, at an end) until none is shorter, or one segment is left.

Each :class:`Segment` covers messages ``start`` (inclusive) to ``end``
(exclusive), and carries its keywords against the other segments
(:func:`~agentctx.compaction.offline.keywords.extract_keywords` with the segments
as background, each message read once) and a title made of the first three. The
result is deterministic.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agentctx.compaction.offline.keywords import keywords_of_spans
from agentctx.compaction.offline.vectors import idf_weights, term_counts
from agentctx.errors import InvalidInput, MissingExtra
from agentctx.llm.embeddings import Embedder, EmbeddingError

log = logging.getLogger(__name__)

TITLE_KEYWORDS = 3
"""How many keywords make a segment's title."""


@dataclass(frozen=True, slots=True)
class Segment:
    """Messages ``start`` (inclusive) to ``end`` (exclusive) on one topic.

    ``title`` is its first keywords joined by commas; ``keywords`` are its best
    keywords, best first. ``depth`` is the depth score of the boundary that opens
    the segment, on the cohesion scale where the most cohesive gap is 1 (so at most
    2.0); 0.0 for the first segment.
    """

    start: int
    end: int
    title: str
    keywords: tuple[str, ...]
    depth: float = 0.0


def _weighted(counts: Counter[str], idf: dict[str, float]) -> dict[str, float]:
    return {term: (1.0 + math.log(n)) * idf[term] for term, n in counts.items()}


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if not a or not b:
        return 0.0
    if len(a) > len(b):
        a, b = b, a
    dot = sum(weight * b.get(term, 0.0) for term, weight in a.items())
    if dot == 0.0:
        return 0.0
    norm = math.sqrt(sum(w * w for w in a.values())) * math.sqrt(sum(w * w for w in b.values()))
    return dot / norm


def _lexical_cohesion(texts: Sequence[str], block: int) -> list[float]:
    counts = [term_counts(text) for text in texts]
    idf = idf_weights(counts)
    scores = []
    for gap in range(1, len(texts)):
        left: Counter[str] = Counter()
        right: Counter[str] = Counter()
        for row in counts[max(0, gap - block) : gap]:
            left.update(row)
        for row in counts[gap : gap + block]:
            right.update(row)
        scores.append(_cosine(_weighted(left, idf), _weighted(right, idf)))
    return scores


def _embedding_cohesion(texts: Sequence[str], block: int, embedder: Embedder) -> list[float] | None:
    """Block cosines of the messages' embeddings above their baseline, or None.

    The baseline is the mean cosine of two messages of the conversation: what any
    two of them share (a language, a register) says nothing about topics, and a
    model that reads the language poorly gives every pair a high cosine. None
    (logged) when the embedder fails or answers with malformed vectors.
    """
    try:
        vectors = np.asarray(embedder.embed(list(texts)), dtype=np.float64)
    except (EmbeddingError, MissingExtra) as exc:
        log.warning("topic boundaries without embeddings, the embedder failed: %s", exc)
        return None
    n = len(texts)
    if vectors.ndim != 2 or vectors.shape[0] != n or not np.isfinite(vectors).all():
        log.warning("topic boundaries without embeddings: %s gave malformed vectors", embedder)
        return None
    total = vectors.sum(axis=0)
    # Sum of v_i . v_j over i != j, without the n x n matrix.
    baseline = float(total @ total - (vectors * vectors).sum()) / (n * (n - 1))
    baseline = min(max(baseline, 0.0), 0.99)
    scores = []
    for gap in range(1, n):
        left = vectors[max(0, gap - block) : gap].sum(axis=0)
        right = vectors[gap : gap + block].sum(axis=0)
        norm = float(np.linalg.norm(left) * np.linalg.norm(right))
        cosine = float(left @ right) / norm if norm > 0 else 0.0
        scores.append(max(0.0, (cosine - baseline) / (1.0 - baseline)))
    return scores


def _scaled(scores: Sequence[float]) -> list[float]:
    """``scores`` divided by their maximum, so that two series blend on one scale."""
    top = max(scores, default=0.0)
    return [score / top for score in scores] if top > 0 else [0.0] * len(scores)


def _depths(scores: Sequence[float]) -> tuple[list[float], list[float]]:
    """Per gap: the depth score, and the sum of the two peaks it is measured from."""
    depths, peaks = [], []
    for i, score in enumerate(scores):
        left = i
        while left > 0 and scores[left - 1] >= scores[left]:
            left -= 1
        right = i
        while right < len(scores) - 1 and scores[right + 1] >= scores[right]:
            right += 1
        depths.append((scores[left] - score) + (scores[right] - score))
        peaks.append(scores[left] + scores[right])
    return depths, peaks


def _valleys(scores: Sequence[float], depths: Sequence[float]) -> list[int]:
    """Gaps no more cohesive than their neighbours; the middle one of a flat bottom."""
    last = len(scores) - 1
    bottoms = [
        i
        for i, depth in enumerate(depths)
        if depth > 0
        and (i == 0 or scores[i] <= scores[i - 1])
        and (i == last or scores[i] <= scores[i + 1])
    ]
    valleys: list[int] = []
    run: list[int] = []
    for i in bottoms:
        if run and (i != run[-1] + 1 or scores[i] != scores[run[-1]]):
            valleys.append(run[(len(run) - 1) // 2])
            run = []
        run.append(i)
    if run:
        valleys.append(run[(len(run) - 1) // 2])
    return valleys


def _boundaries(scores: Sequence[float], threshold: float) -> dict[int, float]:
    """Gap index -> depth of every gap chosen as a boundary."""
    depths, peaks = _depths(scores)
    valleys = _valleys(scores, depths)
    if not valleys:
        return {}
    valley_depths = np.array([depths[i] for i in valleys])
    cutoff = float(valley_depths.mean() - valley_depths.std() / 2)
    return {
        i: depths[i]
        for i in valleys
        if depths[i] >= cutoff - 1e-12 and depths[i] >= threshold * peaks[i] - 1e-12
    }


def _merge_short(n: int, cuts: dict[int, float], min_segment: int) -> dict[int, float]:
    """Boundaries (message index -> depth) with no segment shorter than ``min_segment``."""
    cuts = dict(cuts)
    while cuts:
        edges = [0, *sorted(cuts), n]
        lengths = [edges[i + 1] - edges[i] for i in range(len(edges) - 1)]
        shortest = min(range(len(lengths)), key=lambda i: (lengths[i], i))
        if lengths[shortest] >= min_segment:
            break
        sides = [edge for edge in (edges[shortest], edges[shortest + 1]) if edge in cuts]
        del cuts[min(sides, key=lambda edge: (cuts[edge], edge))]
    return cuts


def topic_boundaries(
    texts: Sequence[str],
    *,
    embedder: Embedder | None = None,
    min_segment: int = 3,
    block: int = 4,
    threshold: float = 0.7,
    embedding_weight: float = 0.4,
    keyword_count: int = 5,
) -> list[Segment]:
    """Split a conversation (``texts``, one per message, in order) into topic segments.

    Returns segments covering ``range(len(texts))`` in order, without gaps: each
    from ``start`` (inclusive) to ``end`` (exclusive); an empty input gives ``[]``,
    fewer than ``2 * min_segment`` messages one segment.

    ``embedder``: blend embedding cohesion into the lexical one, with
    ``embedding_weight`` (0..1). An embedder that fails (``EmbeddingError``, a
    missing extra) is logged and left out; a misconfigured one (``ConfigError``)
    raises. ``min_segment``: fewest messages per segment. ``block``: messages on
    each side of a gap. ``threshold``: 0..1, how far the cohesion must fall at a
    boundary. ``keyword_count``: keywords per segment. Bad options raise
    ``InvalidInput``; no text does.
    """
    if min_segment < 1:
        raise InvalidInput(f"min_segment must be >= 1, got {min_segment}")
    if block < 1:
        raise InvalidInput(f"block must be >= 1, got {block}")
    if not 0.0 <= threshold <= 1.0:
        raise InvalidInput(f"threshold must be within 0..1, got {threshold}")
    if not 0.0 <= embedding_weight <= 1.0:
        raise InvalidInput(f"embedding_weight must be within 0..1, got {embedding_weight}")
    if keyword_count < 0:
        raise InvalidInput(f"keyword_count must be >= 0, got {keyword_count}")
    n = len(texts)
    if n == 0:
        return []
    cuts: dict[int, float] = {}
    if n >= 2 * min_segment:
        scores = _scaled(_lexical_cohesion(texts, block))
        if embedder is not None and embedding_weight > 0:
            dense = _embedding_cohesion(texts, block, embedder)
            if dense is not None:
                scores = [
                    (1 - embedding_weight) * lex + embedding_weight * emb
                    for lex, emb in zip(scores, _scaled(dense), strict=True)
                ]
        gaps = _boundaries(scores, threshold)
        cuts = _merge_short(n, {gap + 1: depth for gap, depth in gaps.items()}, min_segment)
    edges = [0, *sorted(cuts), n]
    spans = [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
    found = keywords_of_spans(texts, spans, keyword_count)
    segments = []
    for (start, end), keywords in zip(spans, found, strict=True):
        words = tuple(keyword.text for keyword in keywords)
        segments.append(
            Segment(
                start=start,
                end=end,
                title=", ".join(words[:TITLE_KEYWORDS]),
                keywords=words,
                depth=round(cuts.get(start, 0.0), 6),
            )
        )
    return segments
