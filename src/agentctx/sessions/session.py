"""``Session``: the handle an agent holds for one conversation of one user."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from agentctx.context.window import ContextWindow
from agentctx.errors import TurnError, TurnNotFound
from agentctx.events import Event, EventDraft, EventType
from agentctx.ids import check_optional_id, new_id
from agentctx.inputs import check_label
from agentctx.priority import foreground_call
from agentctx.privacy.redactor import Redactor, redact_identifier
from agentctx.sessions.handle import SessionHandle
from agentctx.sessions.models import DeleteReport, SessionInfo, TurnInfo, VerifyReport
from agentctx.sessions.turns import Turn, current_turn
from agentctx.tokens.weight import event_weight

if TYPE_CHECKING:
    from agentctx.compaction.fold import FoldSummary
    from agentctx.compaction.reflection import Reflection
    from agentctx.compaction.thread import Summary
    from agentctx.compaction.topics import Topic
    from agentctx.compaction.visual import ImageFrame
    from agentctx.engine import ContextEngine


class Session(SessionHandle):
    """One session of one user. Obtain it from ``ContextEngine.create_session``/``get_session``.

    The handle keeps a snapshot of the session row (``state``, ``state_version``);
    :meth:`refresh` re-reads it. Writes go straight to the log.
    """

    def __init__(
        self, engine: ContextEngine, info: SessionInfo, redactor: Redactor | None = None
    ) -> None:
        self._engine = engine
        self._service = engine._service
        self._info = info
        self._redactor_cache = redactor

    @property
    def redactor(self) -> Redactor:
        """What this session's writes pass through: the engine's redactor plus the agent's
        and the session's allow-lists (resolved once per handle)."""
        if self._redactor_cache is None:
            self._redactor_cache = self._engine.session_redactor(
                self._info.agent_id, self._info.config
            )
        return self._redactor_cache

    def refresh(self) -> SessionInfo:
        """Re-read the session row."""
        self._info = self._service.info(self.user_id, self.id)
        return self._info

    # Writing ----------------------------------------------------------------------------

    def turn(self, *, request_id: str | None = None, author: str | None = None) -> Turn:
        """Begin a turn; use as ``with session.turn() as turn:`` (leaving it ends the turn)."""
        turn = self._begin_turn(request_id=request_id, author=author)
        turn._activate()
        return turn

    def begin_turn(self, *, request_id: str | None = None, author: str | None = None) -> Turn:
        """Begin a turn without making it the current turn of this context: for turns
        that span calls (a REST client, another process). Write through the returned
        turn (or ``open_turn(turn_id)`` later) and end it with ``turn.end(status)``."""
        return self._begin_turn(request_id=request_id, author=author)

    def turn_info(self, turn_id: str) -> TurnInfo:
        """One turn of the session (``TurnNotFound`` for an unknown id)."""
        found = self._service.turns(self.user_id, self.id, turn_id)
        if not found:
            raise TurnNotFound(f"no turn {turn_id!r} in session {self.id}")
        return found[0]

    def open_turn(self, turn_id: str) -> Turn:
        """A handle on a turn begun elsewhere (``begin_turn``, another process) and
        still open: events written through it carry its id. It is not made the current
        turn of this context; end it with ``turn.end(status)``. ``TurnNotFound`` for an
        unknown id, ``TurnError`` for an ended turn."""
        info = self.turn_info(turn_id)
        if info.status != "open":
            raise TurnError(f"turn {turn_id} has ended ({info.status}); open a new turn")
        return Turn(self, info.turn_id, info.request_id or info.turn_id, info.author)

    @foreground_call  # on the agent's thread, as an append is
    def _begin_turn(self, *, request_id: str | None, author: str | None) -> Turn:
        """Record a new turn (storage only; the caller activates it in its context)."""
        if current_turn(self.user_id, self.id) is not None:
            raise TurnError(f"session {self.id} already has an open turn in this context")
        check_optional_id("request_id", request_id)
        check_label(author, "author")
        # The turn row keeps them, and its events carry them: the same stable tokens.
        request_id = str(redact_identifier(self.redactor, request_id or new_id()).value)
        if author is not None:
            author = str(redact_identifier(self.redactor, author).value)
        turn_id = self._service.begin_turn(
            self.user_id, self.id, request_id=request_id, author=author
        )
        return Turn(self, turn_id, request_id, author)

    def _write(self, drafts: Sequence[EventDraft], *, expected_last_seq: int | None) -> list[Event]:
        turn = current_turn(self.user_id, self.id)
        if turn is not None:
            return self._write_in_turn(turn, drafts, expected_last_seq=expected_last_seq)
        written = self._service.append(
            self.user_id,
            self.id,
            drafts,
            turn_id=None,
            request_id=None,
            expected_last_seq=expected_last_seq,
            redactor=self.redactor,
        )
        if written.jobs_waiting is not False:  # the write saw none: nothing to run
            self._engine._after_turn(self.user_id, self.id)
        return written.events

    def _write_in_turn(
        self, turn: Turn, drafts: Sequence[EventDraft], *, expected_last_seq: int | None
    ) -> list[Event]:
        return self._service.append(
            self.user_id,
            self.id,
            drafts,
            turn_id=turn.turn_id,
            request_id=turn.request_id,
            expected_last_seq=expected_last_seq,
            redactor=self.redactor,
        ).events

    @foreground_call  # on the agent's thread, as an append is
    def _end_turn(self, turn: Turn, status: str) -> None:
        self._service.end_turn(self.user_id, self.id, turn.turn_id, status)
        self._engine._after_turn(self.user_id, self.id)

    def _record_turn_error(self, turn: Turn, exc: BaseException) -> None:
        self._write_in_turn(
            turn,
            [
                EventDraft(
                    type=EventType.ERROR,
                    payload={"error_type": type(exc).__name__, "message": str(exc)[:2000]},
                    author=turn.author,
                )
            ],
            expected_last_seq=None,
        )

    def import_legacy(self, *drafts: EventDraft) -> list[Event]:
        """Append events recorded before turns existed (no turn id; never compacted)."""
        return self._service.append(
            self.user_id,
            self.id,
            drafts,
            turn_id=None,
            request_id=None,
            legacy=True,
            redactor=self.redactor,
        ).events

    def update_state(
        self,
        changes: dict[str, Any],
        *,
        expected_version: int | None = None,
        replace: bool = False,
        turn_id: str | None = None,
    ) -> dict[str, Any]:
        """Compare-and-set the state: merge ``changes`` (or replace the state with them).

        The write names the version it read: ``expected_version`` if given, otherwise the
        version this handle last saw. If another writer got there first, ``StaleSession``
        is raised and nothing changes. The change is also recorded as a ``state_delta`` event,
        in the current turn or the open turn ``turn_id``.
        """
        expected = self.state_version if expected_version is None else expected_version
        turn = current_turn(self.user_id, self.id) if turn_id is None else self.open_turn(turn_id)
        state, version, event = self._service.update_state(
            self.user_id,
            self.id,
            changes,
            expected_version=expected,
            replace=replace,
            turn_id=turn.turn_id if turn is not None else None,
            redactor=self.redactor,
        )
        self._info = self._info.model_copy(
            update={
                "state": state,
                "state_version": version,
                "last_seq": event.seq,
                "last_hash": event.hash,
                "weight_total": self._info.weight_total + event_weight(event),
            }
        )
        if turn is None:
            self._engine._after_turn(self.user_id, self.id)
        return dict(state)

    # Context ----------------------------------------------------------------------------

    # From the session row's read on: outside a foreground call, a background thread that
    # holds the interpreter lock keeps it for the default switch interval at each read.
    @foreground_call
    def build_context(
        self,
        query: str | None = None,
        budget: int = 4000,
        *,
        strategy: str | None = None,
        budget_split: dict[str, float] | None = None,
        system_prompt: str | None = None,
        config: dict[str, Any] | None = None,
        restore_images: Sequence[str] = (),
        turn_id: str | None = None,
    ) -> ContextWindow:
        """The context window for the next model call, within ``budget`` tokens.

        ``query`` is what the window should be relevant to (usually the user's latest
        message); ``strategy`` ("full", "compressed", "adaptive", "semantic"),
        ``budget_split`` and ``config`` (any ``ContextConfig`` field) override the agent's
        settings for this call; ``system_prompt`` overrides the agent's system prompt.
        The session state is re-read, so the active task is current. ``restore_images``:
        image ids shown in full although visual compaction replaced them with
        ``[Visual_Placeholder: …]``. ``turn_id``: the open turn the window is for, when it
        is not the current one (the window is kept for that turn's repro package).
        """
        self.refresh()
        if restore_images:
            config = {**(config or {}), "restore_images": tuple(restore_images)}
        return self._engine.build_context(
            self._info,
            query=query,
            budget=budget,
            strategy=strategy,
            budget_split=budget_split,
            system_prompt=system_prompt,
            config=config,
            turn_id=turn_id,
        )

    # Reading ----------------------------------------------------------------------------

    def events(
        self,
        *,
        start_seq: int | None = None,
        end_seq: int | None = None,
        turn_id: str | None = None,
        types: Sequence[EventType | str] | None = None,
        limit: int | None = None,
        last: int | None = None,
    ) -> list[Event]:
        """Events in seq order: a seq range, one turn, some types; ``last=N`` for the newest N."""
        return self._service.events(
            self.user_id,
            self.id,
            start_seq=start_seq,
            end_seq=end_seq,
            turn_id=turn_id,
            types=types,
            limit=limit,
            last=last,
        )

    def read_offloaded(
        self, offloaded_id: str, *, offset: int = 0, max_tokens: int | None = None
    ) -> str:
        """The tool output behind ``[tool_output: out_…, N tokens, use read_offloaded(out_…)]``.

        Without ``max_tokens``, the original from ``offset`` (in characters) to the end;
        with it, a page of at most that many tokens (the next starts at ``offset +
        len(page)``; an empty page is the end). An id from another session raises
        ``BlobNotFound``, like an unknown one.
        """
        from agentctx.compaction.tool_output.offload import read_offloaded_page  # noqa: PLC0415

        return read_offloaded_page(self, offloaded_id, offset=offset, max_tokens=max_tokens).text

    def restore_image(self, image_id: str) -> bytes:
        """The original bytes of an image of this session (behind a
        ``[Visual_Placeholder: img_…]``). An image of another session raises
        ``BlobNotFound``, like an unknown one; one removed by cold-storage retention
        ``ImageExpired``."""
        return self._engine._service.blob_reads.restore_image(self.user_id, image_id, self.id)

    def images(self) -> list[ImageFrame]:
        """Every image reference of the session, in log order, with its frame (anchor,
        result, error, pinned, process; None until its turn is compacted), whether windows
        show it as a placeholder, and its dedup distance."""
        return self._engine.visual.frames(self.user_id, self.id)

    def summaries(self) -> list[Summary]:
        """The session's thread summaries (every version), newest first."""
        return self._engine.thread_summaries.list_summaries(self.user_id, self.id)

    def topics(self) -> list[Topic]:
        """The session's archived topics, oldest first (topic archiving, seed 001)."""
        return self._engine.topics.topics(self.user_id, self.id)

    def reflections(self) -> list[Reflection]:
        """The agent's reflections on this session's assistant messages, in seq order.

        They annotate events and are never part of :meth:`events` or a window.
        """
        return self._engine.reflector.reflections(self.user_id, self.id)

    def folds(self) -> list[FoldSummary]:
        """Every fold summary of the session at every level, in version order."""
        return self._engine.folds.folds(self.user_id, self.id)

    def turns(self) -> list[TurnInfo]:
        """The session's turns, oldest first."""
        return self._service.turns(self.user_id, self.id)

    def verify(self) -> VerifyReport:
        """Check the hash chain of the whole log."""
        return self._service.verify(self.user_id, self.id)

    def export(self) -> Iterator[dict[str, Any]]:
        """Every event as a JSON-ready dict, in seq order."""
        return self._service.export(self.user_id, self.id)

    def delete(self) -> DeleteReport:
        """Delete the session and everything derived from it."""
        return self._engine.delete_session(self.id, self.user_id)
