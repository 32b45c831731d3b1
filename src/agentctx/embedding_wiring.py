"""Who embeds an engine's new events, by its ``jobs`` setting, so that no window waits
for the embedding model (issue: nothing slow on the call path).

- ``background``: a worker thread, asked after every write and by the turn-end job
  (durable), so a window only ranks by the vectors already there (with
  ``retrieval.query_embedding: background`` a new query's vector too is computed by the
  worker, for the next window);
- ``manual``: the turn-end job, when the caller runs pending jobs;
- ``inline``: the searches themselves (at most ``retrieval.inline_embed_limit`` events
  each), for tests and scripts.
"""

from __future__ import annotations

from collections.abc import Callable

from agentctx.config import Settings
from agentctx.jobs import Job
from agentctx.llm.warmup import ModelWarmup
from agentctx.retrieval.embedding_worker import EmbeddingWorker
from agentctx.retrieval.index import SearchIndex
from agentctx.sessions.service import SessionService


def embed_off_the_call_path(
    settings: Settings,
    index: SearchIndex,
    service: SessionService,
    warmup: ModelWarmup | None,
    on_turn_end: Callable[[str, Callable[[Job], None]], None],
) -> EmbeddingWorker | None:
    """Wire the embedding of new events as the module docstring says; the worker thread
    (not started yet) with ``jobs="background"``, else None."""
    if settings.jobs == "inline" or index.embedder is None:
        return None
    worker: EmbeddingWorker | None = None
    if settings.jobs == "background":
        assert warmup is not None
        assert index.query_vectors is not None
        worker = EmbeddingWorker(
            index.embed_step,
            warmup,
            queue_size=settings.retrieval.embed_queue_size,
            batch=settings.retrieval.embed_batch,
            embed_query=index.query_vectors.vector,
        )
        service.after_write = index.request_embedding
    index.embed_in_background(settings.jobs, worker)
    on_turn_end("search_index", index.on_turn_end)
    return worker
