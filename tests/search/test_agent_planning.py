"""The search agent's offline methods and the report's rendering (no servers needed)."""

from __future__ import annotations

import pytest

from agentctx.search import planning
from agentctx.search.report import ReportSource, SearchReport
from agentctx.tokens import EstimateCounter

Q = "What is the boiling point of water on the summit of Mount Everest?"
ANSWERS = (
    "On the summit of Mount Everest the boiling point of water is about 70 degrees.",
    "Water boils near 71 °C at the Mount Everest summit, a low boiling point. Climbers know.",
)


def test_key_terms_drop_stopwords_and_filler() -> None:
    assert planning.key_terms(Q) == ["boil", "point", "water", "summit", "mount", "everest"]
    assert planning.key_terms("珠穆朗玛峰的高度") != []
    assert planning.key_terms("what is it?") == []


def test_confidence_needs_two_independent_sites() -> None:
    one = planning.extract_evidence(Q, [("https://a.org/1", ANSWERS[0])])
    same_site = planning.extract_evidence(
        Q, [("https://a.org/1", ANSWERS[0]), ("https://www.a.org/2", ANSWERS[1])]
    )
    two = planning.extract_evidence(
        Q, [("https://a.org/1", ANSWERS[0]), ("https://b.net/2", ANSWERS[1])]
    )
    assert planning.estimate_confidence(Q, []) == 0.0
    assert planning.estimate_confidence(Q, one) == pytest.approx(0.6)
    assert planning.estimate_confidence(Q, same_site) == pytest.approx(0.6)
    assert planning.estimate_confidence(Q, two) == pytest.approx(1.0)
    # Another port is another server, so another source.
    assert planning.site_of("http://127.0.0.1:8001/a") != planning.site_of(
        "http://127.0.0.1:8002/a"
    )


def test_evidence_is_the_sentences_that_cover_the_question() -> None:
    page = "Cats sleep a lot. " + ANSWERS[0] + " Everest is in Nepal. The weather is cold."
    evidence = planning.extract_evidence(Q, [("https://a.org", page)])
    assert evidence[0].text == ANSWERS[0]
    assert all("Cats" not in e.text and "weather" not in e.text for e in evidence)
    assert evidence[0].terms == frozenset(planning.key_terms(Q))


def test_later_queries_put_missing_terms_first_and_never_repeat() -> None:
    first = planning.plan_queries(Q, iteration=1, coverage=None)
    assert first == [Q]
    evidence = planning.extract_evidence(
        Q, [("https://a.org", "Mount Everest has a summit. Water on the summit.")]
    )
    coverage = planning.coverage_of(Q, evidence)
    assert set(coverage.missing) == {"boil", "point"}
    tried = list(first)
    for iteration in range(2, 8):
        queries = planning.plan_queries(Q, iteration=iteration, coverage=coverage, tried=tried)
        assert queries and not {q.casefold() for q in queries} & {t.casefold() for t in tried}
        tried.extend(queries)
    second = planning.plan_queries(Q, iteration=2, coverage=coverage, tried=first)
    assert second[0].startswith("boiling point")


def test_time_sensitive_questions() -> None:
    assert planning.is_time_sensitive("What is the latest version of Python?")
    assert planning.is_time_sensitive("今天北京天气怎么样")
    assert not planning.is_time_sensitive(Q)


def _report(sources: int, answer: str = "It is 70 degrees [1].") -> SearchReport:
    return SearchReport(
        question=Q,
        answer=answer,
        confidence=0.85,
        iterations=2,
        method="offline",
        stopped="confident",
        sub_session_id="sub-1",
        user_id="u1",
        sources=tuple(
            ReportSource(
                n=n,
                url=f"https://site{n}.org/page",
                title=f"Page {n}",
                published_date="2025-01-02",
                evidence=(ANSWERS[0],),
                page_id=f"out_{n:024d}",
            )
            for n in range(1, sources + 1)
        ),
    )


def test_the_rendered_report_fits_its_cap() -> None:
    counter = EstimateCounter()
    short = _report(2).render(counter, 600)
    assert "confidence 0.85" in short and "out_" in short and "sub-1" in short
    assert ANSWERS[0] in short and "(2025-01-02)" in short
    for cap in (80, 150, 300):
        text = _report(10, answer="word " * 400).render(counter, cap)
        assert counter.count(text) <= cap
        assert "sub-1" in text  # the pointer to the search session always survives
    dropped = _report(10).render(counter, 200)
    assert "more sources in the search session" in dropped
