"""Extractive summaries within a token budget, merged incrementally.

Every sentence (see :mod:`~agentctx.compaction.offline.sentences`) is scored by

* **centrality**: TextRank (PageRank over the TF-IDF cosine graph of the sentences),
  or, past :data:`~agentctx.compaction.offline.graph.MAX_GRAPH` sentences, the
  cosine to the centroid (LexRank's cheap form);
* **position**: the first sentences of a message, the first message (the request)
  and the latest messages count more;
* **keywords**: the texts' best TF-IDF terms (or the keywords given) it contains;
* **cues**: decisions, errors, numbers, dates (:mod:`~agentctx.compaction.offline.cues`),

damped for chit-chat, for questions, for sentences with few content terms, for
code and JSON, and for very long sentences; sentences below 15 % of the best score
are never picked. Sentences are then picked greedily by maximal marginal relevance
(score minus similarity to what is already picked; near-duplicates and exact
repeats are never picked twice) while they fit the budget, and emitted in their
original order: one line per source text.

Whole sentences are picked first; when none fits any more, a sentence longer than
a third of the budget may still be cut to fit with
:func:`agentctx.tokens.truncate_text` (so one huge line still yields a summary).
The rendered summary is counted again by the caller's counter and its weakest
sentences dropped until it fits: the budget holds for any counter.

**Incremental merge.** With ``previous`` (the summary so far), its sentences come
first and the new texts' sentences after them. Half of the budget is reserved for
the new part (or all it needs, if less); the previous summary keeps the rest, whole
when it fits, else its best sentences by the same scoring. Room left over goes back
to whichever side can still use it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agentctx.compaction.offline.cues import cue_score, is_chit_chat
from agentctx.compaction.offline.graph import centrality, similarities
from agentctx.compaction.offline.keywords import is_content_term
from agentctx.compaction.offline.sentences import (
    Sentence,
    SourceText,
    as_sources,
    split_sentences,
)
from agentctx.compaction.offline.vectors import Matrix, cosine_matrix
from agentctx.errors import InvalidInput
from agentctx.priority import yield_to_foreground
from agentctx.retrieval.terms import document_terms
from agentctx.tokens import TokenCounter, truncate_text

TOP_TERMS = 12
"""Without given keywords, this many of the texts' best terms count as keywords."""
MAX_CANDIDATES = 4000
"""At most this many sentences are scored: the first and the last halves of a longer input."""

_WEIGHTS = {"centrality": 0.3, "position": 0.1, "keywords": 0.15, "cues": 0.45}
# Keywords the caller names (a query, a topic's keywords) weigh more than found ones.
_WEIGHTS_GIVEN = {"centrality": 0.25, "position": 0.05, "keywords": 0.35, "cues": 0.35}
_MMR_LAMBDA = 0.7  # relevance against novelty
_DUPLICATE = 0.8  # cosine at which a sentence repeats one already picked
_MIN_CUT = 8  # a sentence is only cut to fit when at least this many tokens are left
_CUT_MARKER = " … "  # where a long sentence was cut; the count-bearing marker is too long here
_CLOSING = "\"')]\u201d\u2019\uff09\u300d\u300f"  # closing quotes and brackets
_FLOOR = 0.15  # sentences scoring below this share of the best one are never picked
_CJK_EDGE = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


@dataclass(frozen=True, slots=True)
class SummarySentence:
    """One sentence of a summary and where it came from.

    ``source`` is the :attr:`SourceText.source` of the text it was taken from, or
    None for a sentence kept from the previous summary; ``start``/``end`` are its
    span in that text (or in the previous summary). ``cut`` says it was shortened.
    """

    text: str
    source: int | None
    start: int
    end: int
    score: float
    cut: bool = False


@dataclass(frozen=True, slots=True)
class ExtractiveSummary:
    """A summary, its size by the counter that was given, and its provenance."""

    text: str
    tokens: int
    counter: str
    sentences: tuple[SummarySentence, ...]

    @property
    def sources(self) -> tuple[int, ...]:
        """The sources the new sentences came from, ascending (previous ones excluded)."""
        return tuple(sorted({s.source for s in self.sentences if s.source is not None}))

    @property
    def kept_previous(self) -> int:
        """How many sentences of the previous summary were kept."""
        return sum(1 for s in self.sentences if s.source is None)


@dataclass(slots=True)
class _Candidate:
    sentence: Sentence
    source: int | None  # None: from the previous summary
    text: str
    order: int  # output order
    source_rank: int  # index of the text it came from among the inputs (-1: previous)
    cut: bool = False


def _candidates(
    sources: Sequence[SourceText], previous: str | None
) -> tuple[list[_Candidate], str]:
    """Sentences of the previous summary, then of each text; exact repeats dropped."""
    found: list[_Candidate] = []
    seen: set[str] = set()

    def add(sentence: Sentence, source: int | None, rank: int) -> None:
        key = " ".join(sentence.text.casefold().split())
        if key in seen:
            return
        seen.add(key)
        found.append(_Candidate(sentence, source, sentence.text, len(found), rank))

    previous_text = previous or ""
    for sentence in split_sentences(previous_text):
        add(sentence, None, -1)
    for rank, item in enumerate(sources):
        for sentence in split_sentences(item.text, item.source):
            add(sentence, item.source, rank)
    if len(found) > MAX_CANDIDATES:
        half = MAX_CANDIDATES // 2
        found = found[:half] + found[-half:]
        for order, candidate in enumerate(found):
            candidate.order = order
    return found, previous_text


def _keyword_terms(
    keywords: Sequence[str] | None, counts: Sequence[Counter[str]]
) -> list[tuple[set[str], float]]:
    """Term sets to look for in sentences, with weights.

    Given keywords weigh 1 each; by default the :data:`TOP_TERMS` content terms of
    the sentences with the highest ``(1 + ln tf) * idf`` (sentences as documents),
    weighted relative to the best.
    """
    if keywords is not None:
        sets = [set(document_terms(keyword)) for keyword in keywords]
        return [(terms, 1.0) for terms in sets if terms]
    tf: Counter[str] = Counter()
    df: Counter[str] = Counter()
    for row in counts:
        tf.update(row)
        df.update(row.keys())
    n = len(counts)
    ranked = sorted(
        (
            ((1.0 + math.log(count)) * (math.log((n + 1) / (df[term] + 1)) + 1.0), term)
            for term, count in tf.items()
            if count >= 2 and is_content_term(term)
        ),
        key=lambda pair: (-pair[0], pair[1]),
    )[:TOP_TERMS]
    if not ranked:
        return []
    top = ranked[0][0]
    return [({term}, score / top) for score, term in ranked]


def _scores(
    candidates: Sequence[_Candidate],
    *,
    counts: Sequence[Counter[str]],
    matrix: Matrix,
    similarity: Matrix | None,
    tokens: Sequence[int],
    keywords: list[tuple[set[str], float]],
    given: bool,
    n_sources: int,
) -> npt.NDArray[np.float64]:
    central = centrality(matrix, similarity)
    weights = _WEIGHTS_GIVEN if given else _WEIGHTS
    saturation = 1.0 if given else 1.5  # keyword weight that counts as a full hit
    scores = np.zeros(len(candidates))
    for i, candidate in enumerate(candidates):
        if not i % 256:
            yield_to_foreground()  # summaries are made in the background
        sentence = candidate.sentence
        if candidate.source is None:
            position = 0.5
        else:
            within = (1.0, 0.7)[sentence.position] if sentence.position < 2 else 0.5
            rank = candidate.source_rank
            recency = 1.0 if rank == 0 else rank / max(n_sources - 1, 1)
            position = 0.6 * within + 0.4 * recency
        terms = counts[i]
        hits = sum(weight for kw_terms, weight in keywords if kw_terms <= terms.keys())
        score = (
            weights["centrality"] * central[i]
            + weights["position"] * position
            + weights["keywords"] * min(1.0, hits / saturation)
            + weights["cues"] * cue_score(candidate.text)
        )
        content = len(terms)
        score *= min(1.0, content / 6)
        if is_chit_chat(candidate.text) and content < 6:
            score *= 0.35
        if sentence.kind == "code":
            score *= 0.6
        if candidate.text.rstrip(_CLOSING).endswith(("?", "\uff1f")):
            score *= 0.75  # a question states a need; the answers carry the facts
        if tokens[i] > 60:
            score *= (60 / tokens[i]) ** 0.5
        scores[i] = score
    return scores


class _Picker:
    """Greedy MMR selection over pools of candidates, sharing one similarity state."""

    def __init__(
        self,
        candidates: list[_Candidate],
        *,
        matrix: Matrix,
        similarity: Matrix | None,
        scores: npt.NDArray[np.float64],
        tokens: Sequence[int],
        counter: TokenCounter,
        cap: int,
    ) -> None:
        self.candidates = candidates
        self.matrix = matrix
        self.similarity = similarity
        self.scores = scores
        self.tokens = np.array(tokens, dtype=np.int64)
        self.counter = counter
        self.cap = cap
        self.max_similarity = np.zeros(len(candidates))
        # Filler that would only pad the budget is never picked.
        self.available = scores >= _FLOOR * float(scores.max(initial=0.0))
        self.picked: list[int] = []
        self.used = 0

    def take(self, i: int) -> None:
        self.used += int(self.tokens[i]) + (1 if self.picked else 0)  # a separator joins it
        self.picked.append(i)
        self.available[i] = False
        if self.similarity is not None:
            row = self.similarity[i].astype(np.float64)
            row[i] = 1.0
        elif self.matrix.shape[1]:
            row = (self.matrix @ self.matrix[i]).astype(np.float64)
        else:
            return
        np.maximum(self.max_similarity, row, out=self.max_similarity)

    def cut(self, i: int, limit: int) -> bool:
        """Shorten candidate ``i`` to ``limit`` tokens; False when nothing is left."""
        text = truncate_text(self.counter, self.candidates[i].text, limit, marker=_CUT_MARKER)
        if not text.strip():
            return False
        self.candidates[i].text = text
        self.candidates[i].cut = True
        self.tokens[i] = self.counter.count(text)
        return bool(self.tokens[i] <= limit)

    def fill(self, pool: Sequence[int], limit: int) -> None:
        """Pick from ``pool`` while the total stays within ``limit`` tokens."""
        in_pool = np.zeros(len(self.candidates), dtype=bool)
        in_pool[list(pool)] = True
        while True:
            room = limit - self.used - (1 if self.picked else 0)
            if room <= 0:
                return
            open_ = in_pool & self.available & (self.max_similarity < _DUPLICATE)
            # Whole sentences first; a long one is cut only when no whole one fits.
            eligible = open_ & (self.tokens <= room)
            cutting = not eligible.any()
            if cutting:
                if room < _MIN_CUT:
                    return
                eligible = open_ & (self.tokens > self.cap)
                if not eligible.any():
                    return
            mmr = _MMR_LAMBDA * self.scores - (1 - _MMR_LAMBDA) * self.max_similarity
            best = int(np.argmax(np.where(eligible, mmr, -np.inf)))  # the first of equals
            self.available[best] = False
            if not cutting or self.cut(best, min(self.cap, room)):
                self.take(best)


def _join(candidates: Sequence[_Candidate], previous: str, sources: dict[int, str]) -> str:
    """The picked sentences in order: one line per text, the source's own spacing within."""
    pieces: list[str] = []
    last: _Candidate | None = None
    for candidate in candidates:
        if last is not None:
            if last.source_rank != candidate.source_rank:
                pieces.append("\n")
            else:
                origin = previous if candidate.source is None else sources[candidate.source_rank]
                gap = origin[last.sentence.end : candidate.sentence.start]
                if "\n" in gap:
                    pieces.append("\n")
                elif _CJK_EDGE.match(last.text[-1:]) and _CJK_EDGE.match(candidate.text[:1]):
                    pieces.append("")
                else:
                    pieces.append(" ")
        pieces.append(candidate.text)
        last = candidate
    return "".join(pieces)


def extractive_summary(
    texts: Sequence[SourceText | str],
    *,
    budget_tokens: int,
    counter: TokenCounter,
    previous: str | None = None,
    keywords: Sequence[str] | None = None,
) -> ExtractiveSummary:
    """The most informative sentences of ``texts`` (merged into ``previous``) within budget.

    ``texts``: the messages to summarize, oldest first (plain strings get their
    position as source). ``budget_tokens``: the most the summary may count by
    ``counter``. ``previous``: the summary so far, to merge the new part into.
    ``keywords``: words or phrases to favour (a query, a topic's keywords); by
    default the texts' own best terms, with less weight.

    The result lists each kept sentence with its source, and its token count by
    ``counter``, never above the budget. Never raises on odd text (empty input,
    whitespace, one huge line, JSON, code); a negative budget is an ``InvalidInput``.
    """
    if budget_tokens < 0:
        raise InvalidInput(f"budget_tokens must be >= 0, got {budget_tokens}")
    sources = as_sources(texts)
    candidates, previous_text = _candidates(sources, previous)
    empty = ExtractiveSummary("", 0, counter.name, ())
    if budget_tokens == 0 or not candidates:
        return empty
    counts = [Counter(document_terms(candidate.text)) for candidate in candidates]
    matrix = cosine_matrix(counts)
    similarity = similarities(matrix)
    tokens = list(counter.count_many([candidate.text for candidate in candidates]))
    keyword_terms = _keyword_terms(keywords, counts)
    scores = _scores(
        candidates,
        counts=counts,
        matrix=matrix,
        similarity=similarity,
        tokens=tokens,
        keywords=keyword_terms,
        given=keywords is not None,
        n_sources=len(sources),
    )
    cap = budget_tokens if len(candidates) == 1 else max(budget_tokens // 3, _MIN_CUT)
    picker = _Picker(
        candidates,
        matrix=matrix,
        similarity=similarity,
        scores=scores,
        tokens=tokens,
        counter=counter,
        cap=min(cap, budget_tokens),
    )

    old = [i for i, c in enumerate(candidates) if c.source is None]
    new = [i for i, c in enumerate(candidates) if c.source is not None]
    if old:
        new_need = sum(tokens[i] + 1 for i in new)
        picker.fill(old, budget_tokens - min(new_need, budget_tokens // 2))
    picker.fill(new, budget_tokens)
    picker.fill(old, budget_tokens)
    if not picker.picked:
        best = int(np.argmax(scores))
        if picker.cut(best, budget_tokens):
            picker.take(best)

    # Count what is rendered (separators and merges across sentences included) and
    # drop the weakest sentence until it fits.
    picked = sorted(picker.picked, key=lambda i: candidates[i].order)
    text, total = "", 0
    texts_by_rank = {rank: item.text for rank, item in enumerate(sources)}
    while picked:
        text = _join([candidates[i] for i in picked], previous_text, texts_by_rank)
        total = counter.count(text)
        if total <= budget_tokens:
            break
        if len(picked) == 1:
            if not picker.cut(picked[0], budget_tokens):
                picked = []
            continue
        picked.remove(min(picked, key=lambda i: (scores[i], -candidates[i].order)))
    if not picked:
        return empty
    chosen = tuple(
        SummarySentence(
            text=candidates[i].text,
            source=candidates[i].source,
            start=candidates[i].sentence.start,
            end=candidates[i].sentence.end,
            score=round(float(scores[i]), 6),
            cut=candidates[i].cut,
        )
        for i in picked
    )
    return ExtractiveSummary(text, total, counter.name, chosen)
