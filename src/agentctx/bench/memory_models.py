"""``agentctx bench memory``'s settings, targets and report: what a run is asked to do
and everything it measured (run by :mod:`agentctx.bench.memory`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from agentctx.bench.machine import Machine
from agentctx.bench.stats import percentile

TOP_K = 10
TOKEN_BUDGET = 500
LATENCY_P95_TARGET_MS = 50.0
SQLITE_TARGET_SIZE = 100_000
PG_TARGET_SIZE = 1_000_000
DEFAULT_SIZES = (10_000, 100_000)


class MemoryBenchConfig(BaseModel):
    """One ``bench memory`` run."""

    data: Path | None = None  # the chat file; None skips part (1)
    limit_questions: int | None = Field(default=None, ge=1)  # per conversation
    embedder: str = "auto"  # the engine's embeddings provider for part (1)
    redaction: bool = False
    sizes: list[int] = Field(default_factory=lambda: list(DEFAULT_SIZES))  # SQLite; [] skips
    pg: bool = False
    pg_sizes: list[int] = Field(default_factory=lambda: list(DEFAULT_SIZES))
    pg_url: str | None = None  # an empty database to use instead of a temporary server
    queries: int = Field(default=200, ge=1)  # timed searches per size
    llm_url: str | None = None
    llm_model: str = "default"
    llm_api_key: str | None = None
    command: str = "agentctx bench memory"

    @field_validator("sizes", "pg_sizes")
    @classmethod
    def _positive(cls, sizes: list[int]) -> list[int]:
        if sizes and min(sizes) < 1:
            raise ValueError("sizes must be positive")
        return sorted(set(sizes))

    def llm_config(self) -> dict[str, Any] | None:
        """The engine's ``llm`` setting for part (3), or None without ``llm_url``."""
        if self.llm_url is None:
            return None
        config: dict[str, Any] = {
            "provider": "openai",
            "base_url": self.llm_url,
            "fast_model": self.llm_model,
        }
        if self.llm_api_key is not None:
            config["api_key"] = self.llm_api_key
        return config


class Spread(BaseModel):
    """p50 / p95 / max of some samples (milliseconds), and how many there were."""

    count: int
    p50: float
    p95: float
    max: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Spread | None:
        """The spread of ``samples`` (None when there are none)."""
        if not samples:
            return None
        ordered = sorted(samples)
        return cls(
            count=len(ordered),
            p50=percentile(ordered, 50),
            p95=percentile(ordered, 95),
            max=ordered[-1],
        )


class RecallFigures(BaseModel):
    """Hits of one system over the questions: at 10 results and within the token budget."""

    system: str
    questions: int
    hits_at_k: int
    hits_in_budget: int
    mean_tokens_at_k: float  # what the 10 results cost, on average
    user_questions: int  # questions with an evidence turn spoken by the user
    user_hits_at_k: int

    @property
    def recall_at_k(self) -> float:
        """Share of questions with an evidence turn among the 10 results."""
        return self.hits_at_k / self.questions if self.questions else 0.0

    @property
    def recall_in_budget(self) -> float:
        """Share of questions with an evidence turn within the token budget."""
        return self.hits_in_budget / self.questions if self.questions else 0.0

    @property
    def user_recall_at_k(self) -> float:
        """Recall at 10 on the questions resting (partly) on the user's own turns."""
        return self.user_hits_at_k / self.user_questions if self.user_questions else 0.0


class QuestionOutcome(BaseModel):
    """One question: its evidence, and the rank (1-based) of the first result citing it."""

    conversation: str
    question: str
    category: int
    evidence: list[str]
    user_evidence: bool
    ranks: dict[str, int | None]  # system -> rank of the first hit within 10 (None: missed)
    in_budget: dict[str, bool]


class LLMUsage(BaseModel):
    """Part (3): what extraction with a chat model cost."""

    model: str
    base_url: str
    turns: int
    calls: int
    attempts: int
    fallbacks: int  # calls that failed, the rules standing in
    prompt_tokens: int
    completion_tokens: int
    ms_per_turn: Spread | None

    @property
    def calls_per_turn(self) -> float:
        """Model calls per dialogue turn."""
        return self.calls / self.turns if self.turns else 0.0

    @property
    def tokens_per_turn(self) -> float:
        """Prompt plus completion tokens per dialogue turn."""
        return (self.prompt_tokens + self.completion_tokens) / self.turns if self.turns else 0.0


class ExtractionRun(BaseModel):
    """Part (1) or (3) for one extraction method: memories made, cost, recall."""

    method: str  # "offline (rules + procedural)" or "llm:<model> + procedural"
    memories: int
    by_kind: dict[str, int]
    ms_per_turn: Spread | None  # extract_session time / the session's turns, per session
    extract_s: float
    recall: RecallFigures
    llm: LLMUsage | None = None


class ChatRecall(BaseModel):
    """Part (1): the chat file, its ingestion and the recall of memories vs raw turns."""

    file: str
    layout: str
    conversations: int
    sessions: int
    turns: int
    user_turns: int
    questions: int
    questions_in_file: int
    ingest_s: float
    index_s: float  # the raw-turn search index (terms and embeddings)
    ask_s: float  # every question, both retrievals
    embedder: str
    offline: ExtractionRun
    raw_turns: RecallFigures
    with_llm: ExtractionRun | None = None
    questions_detail: list[QuestionOutcome] = []


class LatencyFigures(BaseModel):
    """Part (2): memory search latency at one size on one backend."""

    backend: str
    size: int
    fill_s: float
    p50_ms: float
    p95_ms: float
    dense: bool


class Verdict(BaseModel):
    """One target: PASS (True), FAIL (False) or not measured (None), with the figure."""

    name: str
    passed: bool | None
    detail: str


class MemoryBenchReport(BaseModel):
    """Everything one ``bench memory`` run measured."""

    started_at: datetime
    machine: Machine
    config: MemoryBenchConfig
    token_counter: str
    chat: ChatRecall | None = None
    latency: list[LatencyFigures] = []
    latency_embedder: str | None = None
    latency_queries: int = 0
    verdicts: list[Verdict] = []
    notes: list[str] = []
    total_s: float = 0.0
