"""``RemoteSession``: the handle on one session of a server, with ``Session``'s methods.

Recording (``add_message``, ``add_tool_call``, ``add_tool_result``, ``add_event``,
``append``) is inherited from :class:`~agentctx.sessions.recording.EventRecorder`;
only :meth:`RemoteSession._write` talks HTTP. Every append carries an
``Idempotency-Key`` generated for the call, so the transport may retry it after a
lost response and the server still stores each event once.
"""

from __future__ import annotations

import base64
from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from agentctx.client.transport import parse
from agentctx.client.turns import RemoteTurn, TurnKey, current_remote_turn
from agentctx.context.window import ContextReport, ContextWindow
from agentctx.errors import InvalidInput, TurnError, TurnNotFound
from agentctx.events import Event, EventDraft, EventType, ImageData
from agentctx.ids import new_id
from agentctx.sessions.handle import SessionHandle
from agentctx.sessions.models import DeleteReport, Page, SessionInfo, TurnInfo, VerifyReport

if TYPE_CHECKING:
    from agentctx.client.engine import RemoteEngine
    from agentctx.compaction.fold import FoldSummary
    from agentctx.compaction.thread import Summary
    from agentctx.compaction.topics import Topic
    from agentctx.compaction.visual import ImageFrame

PAGE = 1000  # the most events the server returns per page


def draft_body(draft: EventDraft) -> dict[str, Any]:
    """An event draft as the server's JSON takes it: image bytes as base64 text."""
    body = draft.model_dump(mode="json", exclude={"parts"}, exclude_none=True)
    parts: list[dict[str, Any]] = []
    for part in draft.parts:
        if isinstance(part, ImageData):
            image: dict[str, Any] = {
                "kind": "image_data",
                "data": base64.b64encode(part.data).decode("ascii"),
            }
            if part.media_type is not None:
                image["media_type"] = part.media_type
            parts.append(image)
        else:
            parts.append(part.model_dump(mode="json"))
    body["parts"] = parts
    return body


class RemoteSession(SessionHandle):
    """One session of one user on a server. Obtain it from ``RemoteEngine.create_session``
    or ``get_session``; it behaves like the embedded ``Session``.

    The handle keeps a snapshot of the session row (``state``, ``state_version``);
    :meth:`refresh` re-reads it. Writes go straight to the server.
    """

    def __init__(self, engine: RemoteEngine, info: SessionInfo) -> None:
        self._engine = engine
        self._http = engine._http
        self._info = info

    @property
    def _path(self) -> str:
        return f"/v1/sessions/{quote(self.id, safe='')}"

    @property
    def _user(self) -> dict[str, Any]:
        return {"user_id": self.user_id}

    @property
    def _turn_key(self) -> TurnKey:
        return (self._http.url, self.user_id, self.id)

    def refresh(self) -> SessionInfo:
        """Re-read the session row."""
        response = self._http.request("GET", self._path, params=self._user)
        self._info = parse(response, SessionInfo)
        return self._info

    # Turns ------------------------------------------------------------------------------

    def turn(self, *, request_id: str | None = None, author: str | None = None) -> RemoteTurn:
        """Begin a turn; use as ``with session.turn() as turn:`` (leaving it ends the turn)."""
        turn = self.begin_turn(request_id=request_id, author=author)
        turn._activate()
        return turn

    def begin_turn(self, *, request_id: str | None = None, author: str | None = None) -> RemoteTurn:
        """Begin a turn without making it the current turn of this context; write through
        the returned turn (or ``open_turn(turn_id)`` later) and end it with ``turn.end()``."""
        if current_remote_turn(self._turn_key) is not None:
            raise TurnError(f"session {self.id} already has an open turn in this context")
        request_id = request_id or new_id()
        response = self._http.request(
            "POST",
            f"{self._path}/turns",
            params=self._user,
            json={"request_id": request_id, "author": author},
            # A retry after a lost response would open a second turn: only unsent ones.
            retry="unsent",
        )
        info = parse(response, TurnInfo)
        return RemoteTurn(self, info.turn_id, info.request_id or request_id, info.author)

    def turn_info(self, turn_id: str) -> TurnInfo:
        """One turn of the session (``TurnNotFound`` for an unknown id)."""
        found = next((t for t in self.turns() if t.turn_id == turn_id), None)
        if found is None:
            raise TurnNotFound(f"no turn {turn_id!r} in session {self.id}")
        return found

    def open_turn(self, turn_id: str) -> RemoteTurn:
        """A handle on a turn begun elsewhere and still open (``TurnError`` once ended)."""
        info = self.turn_info(turn_id)
        if info.status != "open":
            raise TurnError(f"turn {turn_id} has ended ({info.status}); open a new turn")
        return RemoteTurn(self, info.turn_id, info.request_id or info.turn_id, info.author)

    # Writing ----------------------------------------------------------------------------

    def _write(self, drafts: Sequence[EventDraft], *, expected_last_seq: int | None) -> list[Event]:
        turn = current_remote_turn(self._turn_key)
        return self._post_events(drafts, turn.turn_id if turn else None, expected_last_seq)

    def _write_in_turn(
        self, turn: RemoteTurn, drafts: Sequence[EventDraft], *, expected_last_seq: int | None
    ) -> list[Event]:
        return self._post_events(drafts, turn.turn_id, expected_last_seq)

    def _post_events(
        self, drafts: Sequence[EventDraft], turn_id: str | None, expected_last_seq: int | None
    ) -> list[Event]:
        """Append in one request. The Idempotency-Key makes a retried request return the
        events stored by the first one instead of appending them again."""
        body: dict[str, Any] = {"turn_id": turn_id, "expected_last_seq": expected_last_seq}
        single = len(drafts) == 1
        if single:
            body["event"] = draft_body(drafts[0])
        else:
            body["events"] = [draft_body(d) for d in drafts]
        response = self._http.request(
            "POST",
            f"{self._path}/events" if single else f"{self._path}/events/batch",
            params=self._user,
            json={k: v for k, v in body.items() if v is not None},
            headers={"Idempotency-Key": f"ck_{new_id()}"},
        )
        return [parse(response, Event)] if single else parse(response, list[Event])

    def _end_turn(self, turn: RemoteTurn, status: str) -> None:
        try:
            self._http.request(
                "POST",
                f"{self._path}/turns/{quote(turn.turn_id, safe='')}/end",
                params=self._user,
                json={"status": status},
            )
        except TurnError:
            # A retry whose first attempt ended the turn finds it ended: that is success.
            if self.turn_info(turn.turn_id).status != status:
                raise

    def _record_turn_error(self, turn: RemoteTurn, exc: BaseException) -> None:
        draft = EventDraft(
            type=EventType.ERROR,
            payload={"error_type": type(exc).__name__, "message": str(exc)[:2000]},
            author=turn.author,
        )
        self._write_in_turn(turn, [draft], expected_last_seq=None)

    def update_state(
        self,
        changes: dict[str, Any],
        *,
        expected_version: int | None = None,
        replace: bool = False,
        turn_id: str | None = None,
    ) -> dict[str, Any]:
        """Compare-and-set the state: merge ``changes`` (or replace the state with them).

        The write names the version it read (``expected_version``, else the version this
        handle last saw) in ``If-Match``; if another writer got there first the server
        answers 412 and ``StaleSession`` is raised, nothing changed. The ``state_delta``
        event goes into the current turn, or the open turn ``turn_id``.
        """
        expected = self.state_version if expected_version is None else expected_version
        if turn_id is None:
            turn = current_remote_turn(self._turn_key)
            turn_id = turn.turn_id if turn is not None else None
        response = self._http.request(
            "PATCH",
            f"{self._path}/state",
            params=self._user,
            json={"changes": changes, "replace": replace, "turn_id": turn_id},
            headers={"If-Match": f'"{expected}"'},
            # A retry after a lost response would report its own write as a conflict.
            retry="unsent",
        )
        body = response.json()
        self._info = self._info.model_copy(
            update={"state": body["state"], "state_version": body["state_version"]}
        )
        return dict(body["state"])

    # Context ----------------------------------------------------------------------------

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
    ) -> ContextWindow:
        """The context window for the next model call, within ``budget`` tokens, built
        by the server (``POST …/context``) exactly as ``Session.build_context`` builds it."""
        body = {
            "query": query,
            "budget": budget,
            "strategy": strategy,
            "budget_split": budget_split,
            "system_prompt": system_prompt,
            "config": config,
            "restore_images": list(restore_images),
        }
        response = self._http.request(
            "POST",
            f"{self._path}/context",
            params=self._user,
            json={k: v for k, v in body.items() if v is not None},
        )
        data = response.json()
        report = ContextReport.model_validate(data["report"])
        return ContextWindow(data["messages"], int(data["tokens"]), report)

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
        """Events in seq order: a seq range, one turn, some types; ``last=N`` for the
        newest N. Pages through ``GET …/events`` as far as needed."""
        if last is not None and limit is not None:
            raise InvalidInput("give limit or last, not both")
        if last is not None:
            if last <= 0:
                return []
            if turn_id is None and not types:
                # Seqs have no gaps: the newest N unfiltered events start at a known seq.
                head = self.refresh().last_seq
                upper = min(head, end_seq) if end_seq is not None else head
                start_seq = max(start_seq or 1, upper - last + 1)
                return self._pages(start_seq, end_seq, None, None, None)
            tail: deque[Event] = deque(maxlen=last)
            tail.extend(self._iter_events(start_seq, end_seq, turn_id, types, None))
            return list(tail)
        return self._pages(start_seq, end_seq, turn_id, types, limit)

    def _pages(
        self,
        start_seq: int | None,
        end_seq: int | None,
        turn_id: str | None,
        types: Sequence[EventType | str] | None,
        limit: int | None,
    ) -> list[Event]:
        return list(self._iter_events(start_seq, end_seq, turn_id, types, limit))

    def _iter_events(
        self,
        start_seq: int | None,
        end_seq: int | None,
        turn_id: str | None,
        types: Sequence[EventType | str] | None,
        limit: int | None,
    ) -> Iterator[Event]:
        params: dict[str, Any] = {
            **self._user,
            "after_seq": start_seq - 1 if start_seq is not None and start_seq > 0 else None,
            "until_seq": end_seq,
            "turn_id": turn_id,
            "type": [str(t) for t in types] if types else None,
        }
        remaining = limit
        while remaining is None or remaining > 0:
            params["limit"] = PAGE if remaining is None else min(PAGE, remaining)
            response = self._http.request("GET", f"{self._path}/events", params=params)
            page = parse(response, Page[Event])
            yield from page.items
            if remaining is not None:
                remaining -= len(page.items)
            if page.next_cursor is None:
                return
            params["cursor"] = page.next_cursor

    def export(self) -> Iterator[dict[str, Any]]:
        """Every event as a JSON-ready dict, in seq order."""
        for event in self._iter_events(None, None, None, None, None):
            yield event.model_dump(mode="json")

    def read_offloaded(
        self, offloaded_id: str, *, offset: int = 0, max_tokens: int | None = None
    ) -> str:
        """The tool output behind ``[tool_output: out_…]``, from ``offset``; with
        ``max_tokens`` a page of at most that many tokens (an empty page is the end)."""
        response = self._http.request(
            "GET",
            f"{self._path}/offloaded/{quote(offloaded_id, safe='')}",
            params={**self._user, "offset": offset, "max_tokens": max_tokens},
        )
        return response.text

    def restore_image(self, image_id: str) -> bytes:
        """The original bytes of an image of this session (``BlobNotFound`` for another
        session's, ``ImageExpired`` once cold-storage retention removed it)."""
        response = self._http.request(
            "GET", f"{self._path}/images/{quote(image_id, safe='')}", params=self._user
        )
        return response.content

    def images(self) -> list[ImageFrame]:
        """Every image reference of the session, in log order, with its frame."""
        from agentctx.compaction.visual import ImageFrame  # noqa: PLC0415

        return self._list("images", ImageFrame)

    def summaries(self) -> list[Summary]:
        """The session's thread summaries (every version), newest first."""
        from agentctx.compaction.thread import Summary  # noqa: PLC0415

        return self._list("summaries", Summary)

    def topics(self) -> list[Topic]:
        """The session's archived topics, oldest first."""
        from agentctx.compaction.topics import Topic  # noqa: PLC0415

        return self._list("topics", Topic)

    def folds(self) -> list[FoldSummary]:
        """Every fold summary of the session at every level, in version order."""
        from agentctx.compaction.fold import FoldSummary  # noqa: PLC0415

        return self._list("folds", FoldSummary)

    def _list(self, name: str, item: type[Any]) -> list[Any]:
        response = self._http.request("GET", f"{self._path}/{name}", params=self._user)
        items: list[Any] = parse(response, list[item])  # type: ignore[valid-type]
        return items

    def turns(self) -> list[TurnInfo]:
        """The session's turns, oldest first."""
        response = self._http.request("GET", f"{self._path}/turns", params=self._user)
        return parse(response, list[TurnInfo])

    def verify(self) -> VerifyReport:
        """Check the hash chain of the whole log."""
        response = self._http.request("GET", f"{self._path}/verify", params=self._user)
        return parse(response, VerifyReport)

    def delete(self) -> DeleteReport:
        """Delete the session and everything derived from it."""
        return self._engine.delete_session(self.id, self.user_id)
