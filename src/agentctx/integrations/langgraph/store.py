"""``AgentCtxStore``: a LangGraph ``BaseStore`` whose items are agentctx memories.

``create_react_agent(..., store=AgentCtxStore(engine))``, LangMem's memory tools and
any code that calls ``store.put`` / ``get`` / ``search`` / ``delete`` /
``list_namespaces`` keep their items as long-term memories of agentctx users: redacted,
versioned with their history, searchable by agentctx's hybrid memory search, and
removed by ``engine.delete_user_data``.

Namespaces and users (:class:`Namespaces`): every memory belongs to a user, so every
namespace names one. By default the user is the namespace's second label, as in
LangMem's ``("memories", "{langgraph_user_id}")``; ``Namespaces(user=2)`` takes the
third, ``Namespaces(user="u1")`` puts the whole store in one user's memories.
``agent=`` does the same for the agent (memories written carry it; reads see only
that agent's). A search or a listing must name the user too: a prefix that stops
before the user's label (or has ``*`` there) is refused with ``InvalidInput``.

An item is one memory of kind ``kind`` (default ``fact``):

* its *subject* is a digest of (namespace, key): :mod:`agentctx.memory.keyed` writes
  it in place under that subject -- a new item is created, a put on an existing key
  replaces its value (same memory, a new version in its history; ``created_at``
  kept, ``updated_at`` moved), and it is never merged into another memory;
* its *data* holds the namespace, the key and the value exactly as put, so ``get``
  returns what was put -- unless redaction changed it: personal data in a value
  (or in a namespace label other than the user's or agent's, or a key) is stored
  redacted, and comes back redacted;
* its *content* is the item's text for search: the value's strings at the ``index``
  fields (the put's ``index``, else the store's ``fields``, else every string in the
  value), at most 4,000 characters. ``index=False`` keeps the item out of query
  searches (it is still listed).

``put(namespace, key, None)`` (``delete``) marks the memory deleted (kept in its
history). ``search`` with a ``query`` is agentctx's memory search, best score first;
without, the newest update first. ``filter`` matches value fields as LangGraph's
stores do (equality, nested dicts, ``$eq $ne $gt $gte $lt $lte``). Item TTLs are not
supported (``supports_ttl`` is False): a memory's lifetime is its kind's.

Costs: ``get`` and ``put`` are one indexed lookup each. A search without a query and
``list_namespaces`` read the user's memories of ``kind``; a search with a query reads
more hits than asked when filters leave some out.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    tokenize_path,
)

from agentctx.errors import InvalidInput
from agentctx.events import utcnow
from agentctx.integrations.langgraph.filters import matches_filter, matches_namespace
from agentctx.memory.keyed import find_keyed, put_keyed
from agentctx.memory.models import Memory, MemoryKind
from agentctx.memory.service import MemoryService

ITEM_KEY = "langgraph_item"
"""The memory ``data`` key holding an item's namespace, key and value."""

SUBJECT_PREFIX = "langgraph:"

CONTENT_CHARS = 4000
"""Longest text of an item's memory (what search ranks it by)."""

PAGE = 1000
"""Memories read per page (the memory API's largest)."""

_Scope = tuple[str, tuple[str, ...], dict[str, Any] | None]
"""What a search covers: (user, namespace prefix, value filter)."""


class EngineWithMemory(Protocol):
    """What the store needs of an engine: its long-term memory (an in-process engine)."""

    @property
    def memory(self) -> MemoryService: ...


@dataclass(frozen=True)
class Namespaces:
    """Where a namespace names the agentctx user and agent of its items.

    An ``int`` is the position of the label that names it; a ``str`` names it for
    every namespace; ``agent=None``: items belong to no agent in particular.
    """

    user: int | str = 1
    agent: int | str | None = None

    def user_of(self, namespace: Sequence[str]) -> str | None:
        """The user ``namespace`` names (None: it stops before, or has ``*`` there)."""
        return _label(namespace, self.user)

    def agent_of(self, namespace: Sequence[str]) -> str | None:
        """The agent ``namespace`` names (None: no agent)."""
        return None if self.agent is None else _label(namespace, self.agent)

    def require_user(self, namespace: Sequence[str]) -> str:
        """The user ``namespace`` names, or ``InvalidInput``."""
        user = self.user_of(namespace)
        if user is None:
            raise InvalidInput(
                f"the namespace {tuple(namespace)!r} names no user: its label "
                f"{self.user!r} is the agentctx user (Namespaces(user=...))"
            )
        return user


def _label(namespace: Sequence[str], where: int | str) -> str | None:
    if isinstance(where, str):
        return where
    if where < len(namespace) and namespace[where] != "*":
        return str(namespace[where])
    return None


def item_subject(namespace: Sequence[str], key: str) -> str:
    """The memory subject an item is kept under: a digest of its namespace and key."""
    encoded = json.dumps([list(namespace), key], ensure_ascii=False)
    return SUBJECT_PREFIX + hashlib.sha256(encoded.encode()).hexdigest()[:40]


class AgentCtxStore(BaseStore):
    """A LangGraph store over agentctx long-term memory (see the module docstring)."""

    def __init__(
        self,
        engine: EngineWithMemory,
        *,
        namespaces: Namespaces | None = None,
        kind: MemoryKind | str = MemoryKind.FACT,
        fields: Sequence[str] | None = None,
    ) -> None:
        self.engine = engine
        self.namespaces = namespaces or Namespaces()
        self.kind = MemoryKind(kind)
        self.fields = list(fields) if fields is not None else None

    @property
    def memory(self) -> MemoryService:
        """The engine's long-term memory."""
        return self.engine.memory

    # BaseStore -------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``: reads see the store as it was before the batch; then its puts,
        the last one per (namespace, key), in order."""
        ops = list(ops)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                puts.pop((tuple(op.namespace), op.key), None)
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise InvalidInput(f"unknown store operation {type(op).__name__}")
        for op in puts.values():
            self._put(op)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on a worker thread (the engine's calls block)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # Operations ------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        namespace = _checked(op.namespace)
        user = self.namespaces.require_user(namespace)
        found = find_keyed(self.memory, user, item_subject(namespace, op.key), kind=self.kind)
        if found is None or _expired(found) or not self._visible(found, namespace):
            return None
        item = self._item(found, user)
        # Found by the digest of the namespace and key asked for: those are its own, even
        # where redaction changed the stored copies (a key that is an email address).
        item.namespace, item.key = namespace, op.key
        return item

    def _put(self, op: PutOp) -> None:
        namespace = _checked(op.namespace)
        if not namespace:
            raise InvalidInput("a store namespace may not be empty")
        user = self.namespaces.require_user(namespace)
        subject = item_subject(namespace, op.key)
        if op.value is None:
            found = find_keyed(self.memory, user, subject, kind=self.kind)
            if found is not None and self._visible(found, namespace):
                self.memory.delete(user, found.memory_id)
            return
        value = dict(op.value)
        fields = op.index if op.index is not None else self.fields
        indexed = fields is not False
        text = item_text(value, fields if isinstance(fields, list) else None) if indexed else ""
        record = {"namespace": list(namespace), "key": op.key, "value": value, "indexed": indexed}
        put_keyed(
            self.memory,
            user,
            subject,
            (text or op.key)[:CONTENT_CHARS],
            kind=self.kind,
            data={ITEM_KEY: record},
            agent_id=self.namespaces.agent_of(namespace),
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = _checked(op.namespace_prefix)
        user = self.namespaces.require_user(prefix)
        agent = self.namespaces.agent_of(prefix)
        if op.limit < 0 or op.offset < 0:
            raise InvalidInput("limit and offset must not be negative")
        wanted = op.offset + op.limit
        scope = (user, prefix, op.filter)
        if op.query:
            return self._ranked(op.query, agent, wanted, scope)[op.offset : wanted]
        found: list[SearchItem] = []
        for memory in self._listed(user, agent):
            item = self._kept(memory, None, scope)
            if item is not None:
                found.append(item)
                if len(found) >= wanted:
                    break
        return found[op.offset : wanted]

    def _ranked(
        self, query: str, agent: str | None, wanted: int, scope: _Scope
    ) -> list[SearchItem]:
        """The items in ``scope`` best matching ``query``; more hits are read while the
        scope leaves too few (up to the memory search's largest page)."""
        depth = min(PAGE, max(50, wanted * 4))
        while True:
            hits = self.memory.search(
                scope[0], query, kinds=[self.kind], agent_id=agent, limit=depth
            )
            kept = [
                item
                for hit in hits
                if _record(hit.memory).get("indexed", True)
                and (item := self._kept(hit.memory, hit.score, scope)) is not None
            ]
            if len(kept) >= wanted or len(hits) < depth or depth >= PAGE:
                return kept
            depth = min(PAGE, depth * 4)

    def _listed(self, user: str, agent: str | None) -> Iterable[Memory]:
        """The user's memories of the store's kind, newest update first."""
        offset = 0
        while True:
            page = self.memory.list(
                user, kinds=[self.kind], agent_id=agent, limit=PAGE, offset=offset
            )
            yield from page
            if len(page) < PAGE:
                return
            offset += PAGE

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = [_checked_condition(c) for c in op.match_conditions or ()]
        if isinstance(self.namespaces.user, int):
            users = {
                self.namespaces.user_of(c.path) for c in conditions if c.match_type == "prefix"
            } - {None}
        else:
            users = {self.namespaces.user}
        if len(users) != 1:
            raise InvalidInput(
                "listing namespaces needs a prefix condition that names one user "
                f"(label {self.namespaces.user!r})"
            )
        user = str(users.pop())
        agent = None if isinstance(self.namespaces.agent, int) else self.namespaces.agent
        namespaces: set[tuple[str, ...]] = set()
        for memory in self._listed(user, agent):
            record = _record(memory)
            if not record:
                continue
            namespace = self._namespace(record, user, memory)
            if all(matches_namespace(c, namespace) for c in conditions):
                depth = op.max_depth
                namespaces.add(namespace[:depth] if depth is not None else namespace)
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    # Items -----------------------------------------------------------------------------

    def _kept(self, memory: Memory, score: float | None, scope: _Scope) -> SearchItem | None:
        """``memory`` as a search result, if it is an item in the scope's namespace
        prefix whose value passes the scope's filter."""
        user, prefix, filters = scope
        if not _record(memory):
            return None
        item = self._search_item(memory, user, score)
        if item.namespace[: len(prefix)] != prefix or not matches_filter(item.value, filters):
            return None
        return item

    def _visible(self, memory: Memory, namespace: tuple[str, ...]) -> bool:
        """Whether ``memory`` is this store's item in ``namespace`` (its agent's, if any)."""
        agent = self.namespaces.agent_of(namespace)
        return bool(_record(memory)) and (agent is None or memory.agent_id == agent)

    def _namespace(self, record: Mapping[str, Any], user: str, memory: Memory) -> tuple[str, ...]:
        """An item's namespace, the user's and agent's labels as they are (redaction
        may have replaced them in the stored copy)."""
        labels = [str(label) for label in record.get("namespace") or ()]
        for where, name in ((self.namespaces.user, user), (self.namespaces.agent, memory.agent_id)):
            if isinstance(where, int) and where < len(labels) and name is not None:
                labels[where] = name
        return tuple(labels)

    def _item(self, memory: Memory, user: str) -> Item:
        record = _record(memory)
        return Item(
            value=dict(record.get("value") or {}),
            key=str(record.get("key")),
            namespace=self._namespace(record, user, memory),
            created_at=memory.created_at,
            updated_at=memory.updated_at,
        )

    def _search_item(self, memory: Memory, user: str, score: float | None) -> SearchItem:
        item = self._item(memory, user)
        return SearchItem(
            namespace=item.namespace,
            key=item.key,
            value=item.value,
            created_at=item.created_at,
            updated_at=item.updated_at,
            score=score,
        )


def item_text(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """The text an item is searched by: its strings at ``fields`` (LangGraph's path
    syntax), or every string in the value."""
    if fields is None:
        return "\n".join(_strings(value))
    texts: list[str] = []
    for field in fields:
        if field == "$":
            texts.extend(_strings(value))
        else:
            texts.extend(get_text_at_path(dict(value), tokenize_path(field)))
    return "\n".join(texts)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _record(memory: Memory) -> dict[str, Any]:
    record = memory.data.get(ITEM_KEY)
    return record if isinstance(record, dict) else {}


def _expired(memory: Memory) -> bool:
    expires: datetime | None = memory.expires_at
    return expires is not None and expires <= utcnow()


def _checked(namespace: Sequence[str]) -> tuple[str, ...]:
    labels = tuple(namespace)
    for label in labels:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidInput(
                "namespace labels are non-empty strings without '.' or NUL characters"
            )
    return labels


def _checked_condition(condition: MatchCondition) -> MatchCondition:
    if condition.match_type not in ("prefix", "suffix"):
        raise InvalidInput(f"unknown namespace match type {condition.match_type!r}")
    _checked(condition.path)
    return condition


__all__ = [
    "CONTENT_CHARS",
    "ITEM_KEY",
    "AgentCtxStore",
    "EngineWithMemory",
    "Namespaces",
    "item_subject",
    "item_text",
]
