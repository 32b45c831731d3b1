"""``ContextEngine``: the entry point. Wires storage, blobs, redaction, audit and jobs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from agentctx import at_exit
from agentctx.agents import AgentConfig, AgentRegistry, allow_list_of
from agentctx.cache import HotCache, build_cache
from agentctx.compaction.install import install_compaction
from agentctx.compaction.topics.config import ArchiveThresholds
from agentctx.compaction.visual import CleanupReport, cleanup_cold_storage
from agentctx.config import Settings, load_settings
from agentctx.context.builder import ContextBuilder
from agentctx.context.config import ContextConfig
from agentctx.context.sources import SummarySource
from agentctx.context.window import ContextWindow
from agentctx.data_control import DataControl
from agentctx.embedding_wiring import embed_off_the_call_path
from agentctx.errors import InvalidInput
from agentctx.events import ImagePart
from agentctx.gc_freeze import freeze_at_start_up
from agentctx.hitl import install_hitl
from agentctx.ids import check_id
from agentctx.jobs import Job, JobQueue
from agentctx.jsonvalue import check_object
from agentctx.llm.chat import LLM
from agentctx.llm.config import llm_from_config
from agentctx.llm.embeddings import Embedder, embedder_from_config
from agentctx.llm.warmup import ModelWarmup
from agentctx.memory import MEMORY_JOB, build_memory_service
from agentctx.model_failures import record_model_failure
from agentctx.priority import foreground_call
from agentctx.privacy.redactor import Redactor
from agentctx.retrieval.embedding_worker import EmbeddingWorker
from agentctx.retrieval.index import SearchIndex
from agentctx.search.config import build_provider
from agentctx.sessions.audit import AuditLog, attach_audit_file, detach_audit_file
from agentctx.sessions.erasures import Erasure, HeldCopies
from agentctx.sessions.models import DeleteReport, Page, SessionInfo, SweepReport, VerifyReport
from agentctx.sessions.prepare import Preparer
from agentctx.sessions.redaction import ScopedRedactors, configured_redactor
from agentctx.sessions.service import SessionService
from agentctx.sessions.session import Session
from agentctx.sessions.turn_end import TurnCondition
from agentctx.sessions.writer import EventWriter
from agentctx.storage import migrate
from agentctx.storage.blobs import BlobStore, FileBlobStore
from agentctx.storage.database import Database
from agentctx.tokens import TokenCounter, counter_from_spec
from agentctx.window_sources import WindowSources
from agentctx.windows import Windows

TURN_END_PREFIX = "turn_end:"


if TYPE_CHECKING:
    from agentctx.search.service import SearchService


class ContextEngine:
    """The context engine: sessions, their event logs, blobs and background work.

    ``ContextEngine()`` opens (and migrates) the embedded SQLite database under
    ``$AGENTCTX_HOME`` (default ``~/.agentctx``); ``ContextEngine(url="postgresql://…")``
    runs the same API on PostgreSQL. The engine is thread-safe; share one per process.

    ``redactor``, ``blob_store`` and ``embedder`` replace the configured ones with your
    own implementations of :class:`~agentctx.privacy.redactor.Redactor`,
    :class:`~agentctx.storage.blobs.BlobStore` and
    :class:`~agentctx.llm.embeddings.Embedder` (an embedder with a ``load()`` method is
    loaded in the background as the engine starts).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        home: str | Path | None = None,
        settings: Settings | None = None,
        redactor: Redactor | None = None,
        blob_store: BlobStore | None = None,
        embedder: Embedder | None = None,
        **overrides: Any,
    ) -> None:
        if settings is None:
            given = {k: v for k, v in (("url", url), ("home", home)) if v is not None}
            settings = load_settings(**given, **overrides)
        self.settings = settings
        # The wiring, in the order each part needs the ones before it.
        self._open_storage(redactor, blob_store)
        self._wire_sessions()
        embedder = self._wire_retrieval(embedder)
        fast_llm = llm_from_config(settings.llm, "fast")
        summaries = self._wire_compaction(fast_llm)
        self._wire_memory(embedder, fast_llm)
        # Human in the loop (seed 003 8.1.5): triggers evaluated after turns that could
        # fire one; flags, resolutions and repro packages.
        self.hitl = install_hitl(self, settings.hitl)
        self._wire_window(summaries)
        self._wire_web_search(fast_llm)
        self._start_background_work()
        # A program that ends without close() would leave the background threads
        # running native code while the interpreter finalizes (agentctx.at_exit).
        at_exit.close_at_exit(self)
        self._wire_deletions()
        if settings.embeddings.freeze_gc:
            # The libraries and modules loaded by now last as long as the process: out
            # of full collections, which otherwise stall builds (agentctx.gc_freeze).
            freeze_at_start_up()

    # Wiring stages (in the order __init__ runs them) ------------------------------------

    def _open_storage(self, redactor: Redactor | None, blob_store: BlobStore | None) -> None:
        """The database (migrated), the audit log and file, redaction, blobs and jobs."""
        s = self.settings
        self.db = Database(
            s.database_url(),
            synchronous=s.sqlite_synchronous,
            busy_timeout_ms=s.sqlite_busy_timeout_ms,
            pool_size=s.pool_size,
        )
        migrate.upgrade(self.db)
        audit_path = s.audit_path()
        self._audit_file = attach_audit_file(audit_path) if audit_path is not None else None
        self.redactor: Redactor = redactor or configured_redactor(s.redaction)
        self._redactors = ScopedRedactors(self.redactor)
        self.blobs: BlobStore = blob_store or FileBlobStore(s.blob_path())
        self.audit = AuditLog(self.db, self._audit_file)
        self.jobs = JobQueue(
            self.db, max_attempts=s.job_max_attempts, lease=s.job_lease, redactor=self.redactor
        )
        self.agents = AgentRegistry(self.db)

    def _wire_sessions(self) -> None:
        """The write path (preparation, then the writer) and the hot cache in front of
        the database (events, memory reads)."""
        s = self.settings
        self._turn_end_kinds: list[str] = []
        self._turn_end_conditions: dict[str, TurnCondition] = {}
        writer = EventWriter(
            self.db,
            self.audit,
            self.jobs,
            self.blobs,
            session_ttl=s.session_ttl,
            turn_end_kinds=lambda: self._turn_end_kinds,
            turn_end_conditions=self._turn_end_conditions,
        )
        preparer = Preparer(
            redactor=self.redactor,
            blobs=self.blobs,
            max_inline_bytes=s.max_inline_bytes,
            max_blob_bytes=s.max_blob_bytes,
            max_image_pixels=s.max_image_pixels,
            preview_chars=s.blob_preview_chars,
            dedup=s.visual.dedup,
            on_new_image=self._render_ahead,
        )
        # In this process unless `cache.url` names a Redis; validated by a database read
        # either way.
        self.cache: HotCache = build_cache(s.cache)
        self._service = SessionService(
            self.db,
            preparer=preparer,
            writer=writer,
            audit_log=self.audit,
            blob_store=self.blobs,
            jobs=self.jobs,
            redactor=self.redactor,
            session_ttl=s.session_ttl,
            cache=self.cache,
        )
        self._counters: dict[str, TokenCounter] = {}

    def _render_ahead(self, user_id: str, session_id: str, part: ImagePart, data: bytes) -> None:
        """Start the copy of a newly stored image that the next window shows, at the
        engine's image width (an agent with a width of its own renders at its window)."""
        self.context_builder.render_ahead(user_id, session_id, part, data, self.settings.context)

    def _render_history_ahead(
        self, user_id: str, session_id: str, parts: Sequence[ImagePart]
    ) -> None:
        """Start the copies the history shows of the frames a compacted turn kept, at the
        engine's image settings (see ``ContextBuilder.render_history_ahead``)."""
        self.context_builder.render_history_ahead(user_id, session_id, parts, self.settings.context)

    def _wire_retrieval(self, embedder: Embedder | None) -> Embedder | None:
        """Retrieval: lexical always; dense with the configured embedder (returned).
        Unless jobs run inline, its model loads in the background from the start (no
        window waits for it) and new events are embedded off the call path: see
        :mod:`agentctx.embedding_wiring`."""
        s = self.settings
        if embedder is None:
            embedder = embedder_from_config(s.embeddings, models_dir=s.home / "models")
        self.model_warmup = (
            ModelWarmup(embedder) if embedder is not None and s.jobs != "inline" else None
        )
        self.search_index = SearchIndex(
            self.db, embedder, config=s.retrieval, warmup=self.model_warmup
        )
        self.embedding: EmbeddingWorker | None = embed_off_the_call_path(
            s, self.search_index, self._service, self.model_warmup, self.on_turn_end
        )
        return embedder

    def _wire_compaction(self, fast_llm: LLM | None) -> SummarySource | None:
        """Compaction: summaries, topics, folds, reflections, screenshot placeholders;
        the summaries the window shows."""
        compactors = install_compaction(
            self,
            load_events=self._service.events,
            llm=fast_llm,
            on_llm_failure=self._llm_failed,
            on_kept_frames=self._render_history_ahead,
        )
        self.thread_summaries = compactors.thread_summaries
        self.topics = compactors.topics
        self.folds = compactors.folds
        self.reflector = compactors.reflector
        self.visual = compactors.visual
        return compactors.summaries

    def _wire_memory(self, embedder: Embedder | None, fast_llm: LLM | None) -> None:
        """Long-term memory (seed 003): extracted after each turn, consolidated per user,
        injected as ## Memory (Verified) when enabled; CRUD and search always work."""
        s = self.settings
        self.memory = build_memory_service(
            self.db,
            self._service.events,
            config=s.memory,
            embedder=embedder,
            llm=fast_llm,
            on_llm_failure=self._llm_failed,
            query_vectors=self.search_index.query_vectors,
            redactor=self.redactor,
            audit=self.audit,
        )
        self.memory.use_cache(self.cache)
        if s.memory.enabled:
            self.on_turn_end(MEMORY_JOB, self.memory.on_turn_end)

    def _wire_window(self, summaries: SummarySource | None) -> None:
        """The window builder, over everything wired before it, and the windows each
        agent's settings build with it."""
        s = self.settings
        sources = WindowSources(self._service, self.blobs, s.tool_output)
        self.context_builder = ContextBuilder(
            open_log=sources.open_log,
            counter_for=self.token_counter,
            image_bytes=sources.image_bytes,
            retriever=self.search_index,
            summaries=summaries,
            tool_output=sources.tool_output_text if s.tool_output.enabled else None,
            archived_through=self.topics.archived_through if s.topics.enabled else None,
            image_states=self.visual.image_states,
            memories=self.memory if s.memory.enabled else None,
        )
        self.windows = Windows(
            self.context_builder,
            context=s.context,
            topics=s.topics,
            agents=self.agents,
            redactors=self._redactors,
            recorder=self.hitl,
            record_windows=s.hitl.record_windows,
        )

    def _wire_web_search(self, fast_llm: LLM | None) -> None:
        """Web research sub-agent (seed 000 Phase 4): only when a provider is configured;
        imported lazily so the default install needs no HTTP client."""
        s = self.settings
        self.search: SearchService | None = None
        search_provider = build_provider(s.search)
        if search_provider is not None:
            from agentctx.search.service import SearchService  # noqa: PLC0415

            self.search = SearchService(
                self, search_provider, s.search, llm=llm_from_config(s.llm, "primary") or fast_llm
            )

    def _start_background_work(self) -> None:
        """The model's load, the embedding worker and the job worker, as configured."""
        if self.model_warmup is not None:
            self.model_warmup.start()
        if self.embedding is not None:
            self.embedding.start()
        if self.settings.jobs == "background":
            self.jobs.start_worker()

    def _wire_deletions(self) -> None:
        """Deletions: what this process holds in memory of deleted users and sessions
        goes, whichever process sharing the database deleted them
        (agentctx.sessions.erasures); retention sweeps."""
        held = HeldCopies(
            self.cache,
            self.search_index,
            self.memory.index,
            windows=self.context_builder.prefixes,
            texts=self._forget_texts,
        )
        self._data = DataControl(
            self.settings, self._service, held=held, jobs=self.jobs, memory=self.memory
        )

    # Sessions ---------------------------------------------------------------------------

    def create_session(
        self,
        user_id: str,
        agent_id: str = "default",
        *,
        session_id: str | None = None,
        state: dict[str, Any] | None = None,
        ttl: timedelta | None = None,
        config: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Session:
        """Create a session of ``user_id`` with ``agent_id`` (registered with defaults if new).

        ``config={"pii_allow_list": [...]}`` names values this session never redacts, on
        top of the agent's ``pii_allow_list`` and the engine-wide one.
        """
        check_id("user_id", user_id)
        check_id("agent_id", agent_id)
        check_object({} if config is None else config, where="config")
        agent = self.agents.ensure(agent_id)
        redactor = self._redactors.for_session(agent.pii_allow_list, config or {})
        info = self._service.create(
            user_id,
            agent_id,
            session_id=session_id,
            state=state,
            ttl=ttl,
            config=config,
            meta=metadata,
            redactor=redactor,
        )
        return Session(self, info, redactor)

    def session_redactor(self, agent_id: str, config: dict[str, Any]) -> Redactor:
        """The redactor a session of ``agent_id`` with ``config`` writes through."""
        return self._redactors.for_session(allow_list_of(self.agents.get(agent_id)), config)

    def get_session(self, session_id: str, user_id: str, *, record_access: bool = True) -> Session:
        """Load a session. Another user's session raises ``SessionNotFound``, like a missing one.

        The load is audited and noted as the session's last access; ``record_access=False``
        only reads (for callers that audit the access themselves, like the server).
        """
        if not record_access:
            return Session(self, self._service.info(user_id, session_id))
        return Session(self, self._service.load(user_id, session_id))

    def list_sessions(
        self,
        user_id: str,
        *,
        agent_id: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        search: str | None = None,
    ) -> Page[SessionInfo]:
        """A page of the user's live sessions, oldest first; ``search`` keeps those whose
        id or agent id contains it."""
        return self._service.list_sessions(
            user_id, agent_id=agent_id, limit=limit, cursor=cursor, search=search
        )

    def list_all_sessions(
        self, *, agent_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> Page[SessionInfo]:
        """A page of every user's live sessions, oldest first: for operators and admin
        tools only; user-facing code lists with ``list_sessions(user_id)``."""
        return self._service.list_sessions(None, agent_id=agent_id, limit=limit, cursor=cursor)

    def delete_session(self, session_id: str, user_id: str) -> DeleteReport:
        """Delete a session, its events, turns, jobs and blobs no other session uses."""
        return self._data.delete_session(user_id, session_id)

    def verify(self, session_id: str, user_id: str) -> VerifyReport:
        """Check a session's hash chain; the report names the first bad seq."""
        return self._service.verify(user_id, session_id)

    # Blobs ------------------------------------------------------------------------------

    def get_blob(self, blob_id: str, user_id: str) -> bytes:
        """Bytes of a blob referenced by one of the user's events."""
        return self._service.blob_reads.get_blob(user_id, blob_id)

    def restore_image(self, image_id: str, user_id: str) -> bytes:
        """The original bytes behind an image id (``img_…``), e.g. of a
        ``[Visual_Placeholder: img_…]``; ``ImageExpired`` once cold-storage retention
        removed them, ``BlobNotFound`` for an image no event of the user references."""
        return self._service.blob_reads.restore_image(user_id, image_id)

    def cleanup(
        self, retention_days: int | None = None, *, now: datetime | None = None
    ) -> CleanupReport:
        """Cold-storage retention: remove the bytes of images older than
        ``retention_days`` (default ``visual.retention_days``, 30) that no live window
        needs (every reference compressed or in an expired session), and orphaned
        blobs. Their metadata stays, so a restore says the image expired."""
        days = retention_days if retention_days is not None else self.settings.visual.retention_days
        if days < 1:
            raise InvalidInput(f"retention_days must be at least 1, got {days}")
        report = cleanup_cold_storage(self.db, self.blobs, days, now=now)
        self._data.collect_blobs()
        return report

    # Context ----------------------------------------------------------------------------

    def token_counter(self, spec: str | None = None) -> TokenCounter:
        """The token counter named by ``spec`` (default: the configured one), cached."""
        spec = spec or self.settings.context.tokenizer
        counter = self._counters.get(spec)
        if counter is None:
            counter = self._counters[spec] = counter_from_spec(spec)
        return counter

    def context_config(self, agent: AgentConfig | None) -> ContextConfig:
        """The context settings for ``agent``'s windows: the engine's, then the agent's."""
        return self.windows.config_for(agent)

    @foreground_call  # background threads pause at their next safe point
    def build_context(
        self,
        info: SessionInfo,
        *,
        query: str | None,
        budget: int,
        strategy: str | None = None,
        budget_split: dict[str, float] | None = None,
        system_prompt: str | None = None,
        config: dict[str, Any] | None = None,
        turn_id: str | None = None,
    ) -> ContextWindow:
        """The window for a session (``Session.build_context`` is the usual way in).

        ``info``: the session's row as just read (``Session.build_context`` reads it):
        the window shows the log up to its ``last_seq``, and its state.

        A window built inside a turn (the current one, or ``turn_id``) is the one sent to
        the model for it: it is kept (one upsert, the last per turn) for the turn's repro
        package (``engine.hitl.repro``).
        """
        return self.windows.build(
            info,
            query=query,
            budget=budget,
            strategy=strategy,
            budget_split=budget_split,
            system_prompt=system_prompt,
            config=config,
            turn_id=turn_id,
        )

    def archive_thresholds(self, user_id: str, session_id: str) -> ArchiveThresholds:
        """When topic archiving of a session is due: its agent's ``context_limit``,
        ``context_threshold`` and ``min_archive_messages`` (each left out: the preset of
        the agent's context size, else the ``topics`` settings)."""
        return self.windows.archive_thresholds(self._service.info(user_id, session_id).agent_id)

    def _llm_failed(self, user_id: str, session_id: str, job: str, exc: Exception) -> None:
        """A compaction or memory job's model failed: see ``record_model_failure``."""
        record_model_failure(self._service, user_id, session_id, job, exc)

    def _forget_texts(self) -> None:
        """Drop what windows and redactors keep by text, not by user (see
        HeldCopies.texts)."""
        from agentctx.compaction.tool_output import forget_window_texts  # noqa: PLC0415

        self.context_builder.forget_texts()
        forget_window_texts()
        self._redactors.forget_texts()

    # Data control -----------------------------------------------------------------------

    def delete_user_data(self, user_id: str) -> DeleteReport:
        """Remove everything stored for a user, long-term memories and their history
        included, in one transaction; the report counts what went. Once it returns, every
        engine on the database forgets what it holds of the user within its
        ``erasure_poll``; if the process dies after the commit, the next engine to start
        or the next sweep tells them."""
        return self._data.delete_user_data(user_id)

    def forget_erased(self) -> list[Erasure]:
        """Forget, in this process's memory, the users and sessions whose data another
        process sharing the database deleted since the last call (read from the erasure
        feed); returns those deletions. Runs every ``erasure_poll`` on a background
        thread; call it yourself when that is off."""
        return self._data.forget_erased()

    def sweep(self) -> SweepReport:
        """Delete expired sessions and orphaned blobs, close abandoned turns, trim the audit
        log, the erasure feed and finished jobs, and delete memories past their kind's
        time to live."""
        return self._data.sweep()

    # Agents and hooks -------------------------------------------------------------------

    def register_agent(self, config: AgentConfig) -> AgentConfig:
        """Create or replace an agent's configuration."""
        return self.agents.put(config)

    def on_turn_end(
        self,
        name: str,
        handler: Callable[[Job], None],
        *,
        when: TurnCondition | None = None,
    ) -> None:
        """Run ``handler`` (durably, as a job) after every turn ends, or only after the
        turns for which ``when(conn, user_id, session_id, turn_id)`` holds. A ``when``
        that also has a ``written(events)`` method is asked that instead after an append
        outside a turn, whose own events are the whole turn (no read; see
        :mod:`agentctx.sessions.turn_end`).

        Jobs are queued in the transaction that ends the turn, so none is lost to a
        crash; they may run more than once, so handlers must be idempotent.
        """
        kind = TURN_END_PREFIX + name
        self.jobs.register(kind, handler)
        if kind not in self._turn_end_kinds:
            self._turn_end_kinds.append(kind)
        if when is not None:
            self._turn_end_conditions[kind] = when
        else:
            self._turn_end_conditions.pop(kind, None)

    def _after_turn(self, user_id: str, session_id: str) -> None:
        if self.settings.jobs == "inline" and self._turn_end_kinds:
            self.jobs.run_pending(session=(user_id, session_id))

    # Lifecycle --------------------------------------------------------------------------

    def ping(self) -> None:
        """Run one query against the database (raises if it does not answer)."""
        with self.db.read() as conn:
            conn.execute(text("SELECT 1"))

    def close(self, *, timeout: float = 10.0) -> None:
        """Stop background work and close database connections.

        From the moment it begins no background job starts. A job running in the worker
        has ``timeout`` seconds to finish; past that it is abandoned to its lease
        (``job_lease``): it stays claimed in the database and another engine runs it
        again once the lease lapses. Once ``close`` returned, every read or write
        through this engine, its session handles and its memory raises
        ``EngineClosed``; the abandoned job's included. Closing twice is harmless.
        """
        if self.db.closed:
            return
        at_exit.closed(self)
        self._data.close()
        if self.embedding is not None:
            self.embedding.close(timeout)
        if self.model_warmup is not None:
            # A model still loading writes under the engine's home (its unpacked
            # weights): nothing of this engine's runs on once close returned.
            self.model_warmup.settle(timeout)
        if self.search_index.query_vectors is not None:
            self.search_index.query_vectors.close(timeout)  # a window's query, embedding
        self.memory.flush_audit(timeout)
        self.hitl.close(timeout)
        self.jobs.close(timeout)
        self.cache.close()
        self.db.close(timeout)
        if self._audit_file is not None:
            detach_audit_file(self._audit_file)
            self._audit_file = None

    def __enter__(self) -> ContextEngine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
