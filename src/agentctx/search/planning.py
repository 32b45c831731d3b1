"""The search agent's offline methods: query planning, evidence extraction, confidence.

With no model (or when the model fails) these plan and judge a search, worse than a
model but deterministic, fast and never failing:

* :func:`key_terms`: the content terms of the question (the index analysis of
  :mod:`agentctx.retrieval.terms`: stemmed words, CJK bigrams; stopwords and chat filler
  dropped), which evidence must cover;
* :func:`plan_queries`: the question itself first, then keyword queries that put the
  terms no source covers yet in front;
* :func:`extract_evidence`: the sentences of pages and snippets that cover the most key
  terms, each tied to its source;
* :func:`estimate_confidence`: how much of the key terms the evidence covers, each term
  weighted by how many independent sources (distinct sites) support it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agentctx.compaction.offline.keywords import extract_keywords, is_content_term
from agentctx.compaction.offline.sentences import split_sentences
from agentctx.retrieval.terms import query_terms

# Support a term gets from the number of independent sites that state it: one site is
# a claim, two agreeing sites are a fact (seed 003's N-independent-sources rule).
SOURCE_SUPPORT = (0.0, 0.6, 1.0)
MAX_QUERY_CHARS = 300
MAX_EVIDENCE_CHARS = 400
_TIME_WORD_LIST = """
    latest current currently today now recent recently newest upcoming tonight yesterday
    tomorrow price prices weather news score scores 2024 2025 2026 2027
"""
_TIME_WORDS = frozenset(_TIME_WORD_LIST.split())
_TIME_CJK = ("最新", "今天", "现在", "目前", "当前", "今年", "近期", "最近", "新闻", "价格", "天气")
# Words appended to a query that would repeat an earlier one, so each query differs.
_VARIANTS = ("explained", "facts", "overview", "details", "source")


@dataclass(frozen=True, slots=True)
class Evidence:
    """A sentence of a source that bears on the question.

    ``source`` is the source's URL; ``terms`` the question's key terms it contains;
    ``score`` the share of key terms it covers.
    """

    text: str
    source: str
    terms: frozenset[str]
    score: float


@dataclass(slots=True)
class Coverage:
    """Which key terms the evidence covers, and by how many independent sites."""

    terms: tuple[str, ...]
    sites: dict[str, set[str]] = field(default_factory=dict)  # term -> sites stating it

    @property
    def missing(self) -> list[str]:
        """Key terms no evidence states, in question order."""
        return [term for term in self.terms if not self.sites.get(term)]

    @property
    def weak(self) -> list[str]:
        """Key terms only one site states."""
        return [term for term in self.terms if len(self.sites.get(term, ())) == 1]


def site_of(url: str) -> str:
    """The site a URL belongs to, which counts as one source: its host (without
    ``www.``), with the port when one is given (another port is another server)."""
    parts = urlsplit(url)
    host = (parts.hostname or url).removeprefix("www.").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port else host


def key_terms(question: str) -> list[str]:
    """The question's content terms (index terms), in order; every term if none is content."""
    terms = query_terms(question)
    content = [term for term in terms if is_content_term(term)]
    return content or terms


def is_time_sensitive(question: str) -> bool:
    """Whether the question asks about something current (the provider may date the query)."""
    words = set(re.findall(r"[a-z0-9]+", question.casefold()))
    return bool(words & _TIME_WORDS) or any(word in question for word in _TIME_CJK)


def _clip(query: str) -> str:
    query = " ".join(query.split())
    return query[:MAX_QUERY_CHARS].rstrip()


def _unique(query: str, tried: set[str]) -> str:
    """``query``, or with a variant word appended, so that it was not tried before."""
    base = _clip(query)
    if base.casefold() not in tried:
        return base
    for variant in _VARIANTS:
        candidate = _clip(f"{base} {variant}")
        if candidate.casefold() not in tried:
            return candidate
    return base


def _surface_words(question: str, terms: Sequence[str]) -> dict[str, str]:
    """A readable form of each key term (the question's word rather than its stem)."""
    forms: dict[str, str] = {}
    for keyword in extract_keywords(question, k=32):
        for term in query_terms(keyword.text):
            forms.setdefault(term, keyword.text if " " not in keyword.text else term)
    return {term: forms.get(term, term) for term in terms}


def plan_queries(
    question: str,
    *,
    iteration: int,
    coverage: Coverage | None,
    tried: Iterable[str] = (),
    hints: Sequence[str] = (),
    limit: int = 2,
) -> list[str]:
    """The queries of one iteration (1-based), none repeating one in ``tried``.

    The first iteration searches for the question as asked; later ones put the key terms
    no source covers yet (then those only one site states) before the rest, and
    ``hints`` (keywords of the evidence found so far) narrow them.
    """
    seen = {query.casefold() for query in tried}
    terms = key_terms(question)
    if iteration <= 1 or coverage is None:
        queries = [_unique(question, seen)]
    else:
        forms = _surface_words(question, terms)
        missing, weak = coverage.missing, coverage.weak
        rest = [term for term in terms if term not in missing and term not in weak]
        ordered = [forms[term] for term in [*missing, *weak, *rest]]
        queries = []
        focus = missing or weak
        if focus:
            queries.append(" ".join([*(forms[term] for term in focus), *ordered[len(focus) :]]))
        queries.append(" ".join([*ordered, *hints[:2]]) if hints else " ".join(ordered))
        queries = [_unique(query, seen) for query in queries if query.strip()]
    result: list[str] = []
    for query in queries:
        if query and query.casefold() not in {q.casefold() for q in result}:
            result.append(query)
            seen.add(query.casefold())
    return result[:limit] or [_unique(question, seen)]


def _covered(sentence_terms: set[str], terms: Sequence[str]) -> frozenset[str]:
    return frozenset(term for term in terms if term in sentence_terms)


def extract_evidence(
    question: str,
    sources: Sequence[tuple[str, str]],
    *,
    per_source: int = 3,
    limit: int = 12,
) -> list[Evidence]:
    """The sentences of ``sources`` (``(url, text)`` pairs) that best cover the question.

    A sentence counts when it contains at least a third of the key terms (at least one,
    at least two when the question has four or more); each source gives at most
    ``per_source`` sentences; the best ``limit`` overall are returned, best first, ties
    in source order.
    """
    terms = key_terms(question)
    if not terms:
        return []
    needed = max(1, min(2, len(terms) // 2), -(-len(terms) // 3))
    found: list[tuple[float, int, Evidence]] = []
    order = 0
    for url, text in sources:
        scored: list[tuple[float, int, Evidence]] = []
        seen_texts: set[str] = set()
        for sentence in split_sentences(text):
            if sentence.kind != "prose" or sentence.text in seen_texts:
                continue
            seen_texts.add(sentence.text)
            covered = _covered(set(query_terms(sentence.text)), terms)
            if len(covered) < needed:
                continue
            score = len(covered) / len(terms)
            snippet = sentence.text[:MAX_EVIDENCE_CHARS]
            order += 1
            scored.append((score, order, Evidence(snippet, url, covered, round(score, 4))))
        scored.sort(key=lambda item: (-item[0], item[1]))
        found.extend(scored[:per_source])
    found.sort(key=lambda item: (-item[0], item[1]))
    return [evidence for _, _, evidence in found[:limit]]


def coverage_of(question: str, evidence: Iterable[Evidence]) -> Coverage:
    """Which of the question's key terms ``evidence`` covers, and on which sites."""
    coverage = Coverage(tuple(key_terms(question)))
    for item in evidence:
        for term in item.terms:
            coverage.sites.setdefault(term, set()).add(site_of(item.source))
    return coverage


def estimate_confidence(question: str, evidence: Iterable[Evidence]) -> float:
    """How well ``evidence`` answers the question, in [0, 1].

    The mean over the question's key terms of each term's support: 0 when no evidence
    states it, 0.6 when one site does, 1.0 when two or more independent sites do. So
    one page that covers the whole question is not enough for 0.8; two sites are.
    """
    coverage = coverage_of(question, evidence)
    if not coverage.terms:
        return 0.0
    top = len(SOURCE_SUPPORT) - 1
    total = sum(
        SOURCE_SUPPORT[min(len(coverage.sites.get(term, ())), top)] for term in coverage.terms
    )
    return round(total / len(coverage.terms), 4)


def rank_results(question: str, candidates: Sequence[tuple[str, str, float | None]]) -> list[int]:
    """Indexes of ``(title, snippet, provider score)`` candidates, most promising first:
    by key terms covered in title and snippet, then by the provider's score, then by
    their order."""
    terms = key_terms(question)

    def key(index: int) -> tuple[float, float, int]:
        title, snippet, score = candidates[index]
        covered = _covered(set(query_terms(f"{title} {snippet}")), terms)
        share = len(covered) / len(terms) if terms else 0.0
        return (-share, -(score or 0.0), index)

    return sorted(range(len(candidates)), key=key)


def evidence_keywords(evidence: Sequence[Evidence], question: str, k: int = 3) -> list[str]:
    """Keywords of the evidence that are not already in the question (refinement hints)."""
    if not evidence:
        return []
    asked = set(query_terms(question))
    found = extract_keywords([item.text for item in evidence], k=k * 3)
    hints = [kw.text for kw in found if not set(query_terms(kw.text)) & asked]
    return hints[:k]


def extractive_answer(evidence: Sequence[Evidence], sources: Sequence[str], n: int = 3) -> str:
    """The best ``n`` evidence sentences, each cited by its source's number in ``sources``."""
    chosen: list[Evidence] = []
    # The best sentence of each source first (independent sources), then the next best.
    for item in evidence:
        if len(chosen) < n and all(item.source != c.source for c in chosen):
            chosen.append(item)
    for item in evidence:
        if len(chosen) < n and item not in chosen:
            chosen.append(item)
    parts: list[str] = []
    seen: set[str] = set()
    for item in chosen:
        if item.text.casefold() in seen:
            continue
        seen.add(item.text.casefold())
        number = sources.index(item.source) + 1 if item.source in sources else 0
        parts.append(f"{item.text} [{number}]" if number else item.text)
    return " ".join(parts)
