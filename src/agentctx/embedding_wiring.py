"""Who embeds an engine's new events, by its ``jobs`` setting, so that no window waits
for the embedding model (issue: nothing slow on the call path).

- ``background``: a worker thread, asked after every write and by the turn-end job
  (durable), so a window only ranks by the vectors already there (with
  ``retrieval.query_embedding: background`` a new query's vector too is computed by the
  worker, for the next window). An append that brings the user's text starts that
  text's query embedding at once (:func:`prefetch_user_text`): the next window's query
  is usually the user's newest text (the framework integrations ask it), and its
  embedding then runs beside the append instead of inside the window;
- ``manual``: the turn-end job, when the caller runs pending jobs;
- ``inline``: the searches themselves (at most ``retrieval.inline_embed_limit`` events
  each), for tests and scripts.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence

from agentctx.config import Settings
from agentctx.events import EventDraft, Role
from agentctx.jobs import Job
from agentctx.llm.warmup import ModelWarmup
from agentctx.retrieval.embedding_worker import EmbeddingWorker
from agentctx.retrieval.index import SearchIndex
from agentctx.sessions.service import SessionService

log = logging.getLogger(__name__)


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
        service.before_write = functools.partial(prefetch_user_text, index)
    index.embed_in_background(settings.jobs, worker)
    on_turn_end("search_index", index.on_turn_end)
    return worker


def prefetch_user_text(
    index: SearchIndex, user_id: str, session_id: str, drafts: Sequence[EventDraft]
) -> None:
    """Start embedding the newest user text among ``drafts`` as a query of the session
    (``SearchIndex.prefetch``: on the agent's helper thread, once the model is ready,
    unless the vector is held already). Never raises: a failure only loses the head
    start, and the window embeds the query itself."""
    text = newest_user_text(drafts)
    if text is None:
        return
    try:
        index.prefetch(user_id, session_id, text)
    except Exception:  # an optimisation: the append goes on whatever happened here
        log.debug("could not start a query embedding ahead of the window", exc_info=True)


def newest_user_text(drafts: Sequence[EventDraft]) -> str | None:
    """The text parts, joined by newlines, of the newest draft the user wrote that has
    text (as the framework integrations take a window's query), or None."""
    for draft in reversed(drafts):
        if draft.stored_role == Role.USER and (text := draft.text).strip():
            return text
    return None
