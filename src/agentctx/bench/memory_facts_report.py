"""The fact-timeline report: a table per half against the targets, then what failed."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agentctx.bench.memory_facts import TARGETS, FactsReport, HalfReport


def _mark(ok: bool) -> str:
    return "met" if ok else "**missed**"


def half_rows(half: HalfReport) -> list[tuple[str, str, str]]:
    """(metric, figure, verdict) rows of one half."""
    rows = [
        (
            "latest truth (top memory)",
            f"{half.share():.3f} ({sum(o.correct for o in half.outcomes)}/{len(half.outcomes)})",
            _mark(half.share() >= TARGETS["latest_truth"]),
        ),
        ("  of which English", f"{half.share('en'):.3f}", ""),
        ("  of which Chinese", f"{half.share('zh'):.3f}", ""),
        ("  of which as_of", f"{half.share(as_of=True):.3f}", ""),
        (
            "  of the questions whose answer was stored",
            f"{half.share(stored_only=True):.3f} ({half.redacted_answers} answers redacted)",
            _mark(half.share(stored_only=True) >= TARGETS["latest_truth"]),
        ),
        ("stale memories injected", str(half.stale_injected), _mark(half.stale_injected == 0)),
        (
            "paraphrase recall@5",
            f"{half.paraphrase_recall():.3f}",
            _mark(half.paraphrase_recall() >= TARGETS["paraphrase_recall_at_5"]),
        ),
        (
            "  of the questions whose answer was stored",
            f"{half.paraphrase_recall(stored_only=True):.3f}",
            _mark(half.paraphrase_recall(stored_only=True) >= TARGETS["paraphrase_recall_at_5"]),
        ),
    ]
    for name, score in sorted(half.extraction.categories.items()):
        ok = (
            score.recall >= TARGETS["extraction_recall"]
            and score.precision >= TARGETS["extraction_precision"]
        )
        right = score.memories - score.wrong
        figure = (
            f"recall {score.recall:.2f} ({score.learned}/{score.stated}), "
            f"precision {score.precision:.2f} ({right}/{score.memories})"
        )
        rows.append((f"extraction: {name}", figure, _mark(ok)))
    return rows


def facts_markdown(report: FactsReport) -> str:
    """The report as Markdown tables (one per half), with the calibration if measured."""
    gate = "on (the default)" if report.redaction else "off"
    lines: list[str] = [f"Embedder: `{report.embedder}`; redaction {gate}.", ""]
    for half in report.halves:
        lines += [
            f"**{half.name}** ({half.cases} cases, {len(half.outcomes)} questions)",
            "",
            "| metric | figure | target |",
            "|---|---|---|",
        ]
        lines += [f"| {m} | {f} | {v} |" for m, f, v in half_rows(half)]
        lines.append("")
    if report.calibration is not None:
        c = report.calibration
        lines.append(
            f"Calibrated dense threshold for `{c.embedder}`: **{c.threshold}** "
            f"({c.relevant} relevant / {c.irrelevant} irrelevant pairs of the dev half "
            "and the chats given to --calibrate-with; "
            f"{c.relevant_passing:.2f} of relevant and {c.irrelevant_passing:.2f} of "
            "irrelevant pairs pass)."
        )
    return "\n".join(lines) + "\n"


HELDOUT = "heldout"
"""The half that is measured, never tuned on: its misses are not shown unless asked."""


def failures_text(report: FactsReport, *, limit: int = 40, heldout: bool = False) -> str:
    """What went wrong, per half: wrong answers, stale injections, missed facts, false
    memories (at most ``limit`` lines each). The ``heldout`` half's only when asked:
    whoever reads its misses can no longer measure on it what they change next."""
    out: list[str] = []
    for half in report.halves:
        if half.name == HELDOUT and not heldout:
            out.append(f"== {half.name}: misses not shown (--show-heldout-misses)")
            continue
        wrong = [o for o in half.outcomes if not o.correct]
        out.append(f"== {half.name}: {len(wrong)} wrong answers")
        out += [
            f"  {o.case} | {o.question} | as_of={o.as_of} | top={o.top!r}" for o in wrong[:limit]
        ]
        stale = [o for o in half.outcomes if o.stale_injected]
        out += [f"  STALE {o.case} | {o.question} | {list(o.stale_injected)}" for o in stale]
        for name, score in sorted(half.extraction.categories.items()):
            out += [f"  MISSED {name}: {m}" for m in score.missed[:limit]]
            out += [f"  FALSE {name}: {f}" for f in score.false[:limit]]
    return "\n".join(out) + "\n"


def facts_json(report: FactsReport) -> dict[str, Any]:
    """The report as JSON-ready data."""
    return {
        "embedder": report.embedder,
        "redaction": report.redaction,
        "targets": TARGETS,
        "halves": [
            {
                "name": half.name,
                "cases": half.cases,
                "questions": len(half.outcomes),
                "latest_truth": half.share(),
                "latest_truth_en": half.share("en"),
                "latest_truth_zh": half.share("zh"),
                "latest_truth_as_of": half.share(as_of=True),
                "latest_truth_answer_stored": half.share(stored_only=True),
                "answers_redacted": half.redacted_answers,
                "stale_injected": half.stale_injected,
                "paraphrase_recall_at_5": half.paraphrase_recall(),
                "paraphrase_recall_at_5_answer_stored": half.paraphrase_recall(stored_only=True),
                "extraction": {
                    name: {
                        "stated": s.stated,
                        "learned": s.learned,
                        "recall": s.recall,
                        "memories": s.memories,
                        "precision": s.precision,
                    }
                    for name, s in sorted(half.extraction.categories.items())
                },
                "wrong": [asdict(o) for o in half.outcomes if not o.correct],
            }
            for half in report.halves
        ],
        "calibration": asdict(report.calibration) if report.calibration else None,
    }


__all__ = ["facts_json", "facts_markdown", "failures_text", "half_rows"]
