"""``AgentCtxStore``: LangGraph's store API over agentctx memory, on SQLite and PostgreSQL,
with LangMem's memory tools and a prebuilt agent that uses them."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp

from agentctx import ContextEngine
from agentctx.errors import InvalidInput
from agentctx.integrations.langgraph import AgentCtxStore, Namespaces
from integrations.scripted_chat_model import call, scripted

NS = ("memories", "u1")


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        yield engine


@pytest.fixture
def store(eng: ContextEngine) -> AgentCtxStore:
    return AgentCtxStore(eng)


def test_get_returns_what_was_put_and_a_put_replaces_in_place(
    eng: ContextEngine, store: AgentCtxStore
) -> None:
    value: dict[str, Any] = {
        "content": "User prefers window seats",
        "tags": ["travel", "flights"],
        "score": 4.5,
        "nested": {"count": 3, "ok": True, "none": None, "text": "São Paulo, 東京"},
    }
    store.put(NS, "seat", value)
    item = store.get(NS, "seat")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (NS, "seat", value)
    assert item.created_at == item.updated_at
    assert store.get(NS, "other") is None
    assert store.get(("memories", "u2"), "seat") is None  # another user's namespace

    store.put(NS, "seat", {"content": "User prefers aisle seats"})
    replaced = store.get(NS, "seat")
    assert replaced is not None and replaced.value == {"content": "User prefers aisle seats"}
    assert replaced.created_at == item.created_at and replaced.updated_at > item.updated_at
    # One memory of the user, its text the item's, its history both values.
    memories = eng.memory.list("u1")
    assert [m.content for m in memories] == ["User prefers aisle seats"]
    assert [c.action for c in eng.memory.history("u1", memories[0].memory_id)] == [
        "create",
        "update",
    ]


def test_equal_values_under_two_keys_stay_two_items(store: AgentCtxStore) -> None:
    store.put(NS, "a", {"content": "User lives in Lisbon"})
    store.put(NS, "b", {"content": "User lives in Lisbon"})
    assert {i.key for i in store.search(NS)} == {"a", "b"}


def test_delete_is_a_put_of_none(eng: ContextEngine, store: AgentCtxStore) -> None:
    store.put(NS, "a", {"content": "temporary"})
    store.put(NS, "b", {"content": "kept"})
    store.delete(NS, "a")
    store.batch([PutOp(NS, "missing", None)])  # deleting nothing is no error
    assert store.get(NS, "a") is None
    assert [i.key for i in store.search(NS)] == ["b"]
    assert [i.key for i in store.search(NS, query="temporary")] == []
    # Deleted, not erased: the memory keeps its history.
    assert eng.memory.counts("u1") == {"active": 1, "deleted": 1}
    store.put(NS, "a", {"content": "back again"})  # a new item under the old key
    again = store.get(NS, "a")
    assert again is not None and again.value == {"content": "back again"}


def test_search_by_prefix_filter_limit_and_offset(store: AgentCtxStore) -> None:
    for i in range(6):
        store.put(NS, f"k{i}", {"content": f"note {i}", "n": i, "meta": {"even": i % 2 == 0}})
    store.put((*NS, "work"), "w", {"content": "work note", "n": 10, "meta": {"even": True}})
    store.put(("memories", "u2"), "x", {"content": "someone else's", "n": 1})

    everything = store.search(NS, limit=100)
    assert [i.key for i in everything] == ["w", "k5", "k4", "k3", "k2", "k1", "k0"]
    assert all(i.score is None for i in everything)
    assert [i.key for i in store.search(NS, limit=2, offset=1)] == ["k5", "k4"]
    assert [i.key for i in store.search((*NS, "work"))] == ["w"]
    assert [i.key for i in store.search(NS, filter={"n": {"$gte": 3, "$lt": 5}})] == [
        "k4",
        "k3",
    ]
    assert [i.key for i in store.search(NS, filter={"meta": {"even": True}}, limit=3)] == [
        "w",
        "k4",
        "k2",
    ]
    assert [i.key for i in store.search(NS, filter={"n": {"$ne": 10}, "content": "note 0"})] == [
        "k0"
    ]
    with pytest.raises(InvalidInput, match="names no user"):
        store.search(("memories",))


def test_a_query_ranks_by_score_and_skips_unindexed_items(store: AgentCtxStore) -> None:
    store.put(NS, "coffee", {"content": "User drinks black coffee every morning"})
    store.put(NS, "tea", {"content": "User likes green tea"})
    store.put(NS, "coffee2", {"content": "Coffee with oat milk, no sugar", "kind": "order"})
    store.put(NS, "hidden", {"content": "coffee secret stash"}, index=False)
    store.put(NS, "title", {"title": "espresso machine", "body": "coffee"}, index=["title"])

    hits = store.search(NS, query="coffee")
    keys = [h.key for h in hits]
    assert set(keys) == {"coffee", "coffee2"}  # "hidden" is not indexed, "title" by its title
    scores = [h.score for h in hits]
    assert all(s is not None and s > 0 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert [h.key for h in store.search(NS, query="coffee", filter={"kind": "order"})] == [
        "coffee2"
    ]
    assert [h.key for h in store.search(NS, query="espresso")] == ["title"]
    assert [h.key for h in store.search(NS, query="coffee", limit=1, offset=1)] == keys[1:2]
    assert "hidden" in {i.key for i in store.search(NS, limit=50)}  # listed all the same


def test_list_namespaces(store: AgentCtxStore) -> None:
    for namespace in [NS, (*NS, "work"), (*NS, "work", "2025"), (*NS, "home")]:
        store.put(namespace, "k", {"content": "x"})
    assert store.list_namespaces(prefix=NS) == [
        NS,
        (*NS, "home"),
        (*NS, "work"),
        (*NS, "work", "2025"),
    ]
    assert store.list_namespaces(prefix=NS, max_depth=3) == [NS, (*NS, "home"), (*NS, "work")]
    assert store.list_namespaces(prefix=NS, suffix=("work",)) == [(*NS, "work")]
    assert store.list_namespaces(prefix=("memories", "u1", "*", "2025")) == [(*NS, "work", "2025")]
    assert store.list_namespaces(prefix=NS, limit=2, offset=1) == [(*NS, "home"), (*NS, "work")]
    with pytest.raises(InvalidInput, match="names one user"):
        store.list_namespaces(prefix=("memories", "*"))


def test_namespaces_map_onto_users_and_agents(eng: ContextEngine) -> None:
    by_agent = AgentCtxStore(eng, namespaces=Namespaces(user=1, agent=2))
    by_agent.put(("mem", "u1", "planner"), "k", {"content": "Planner notes"})
    by_agent.put(("mem", "u1", "coder"), "k", {"content": "Coder notes"})
    assert {m.agent_id for m in eng.memory.list("u1")} == {"planner", "coder"}
    found = by_agent.get(("mem", "u1", "coder"), "k")
    assert found is not None and found.value == {"content": "Coder notes"}
    assert [i.value["content"] for i in by_agent.search(("mem", "u1", "planner"))] == [
        "Planner notes"
    ]

    one_user = AgentCtxStore(eng, namespaces=Namespaces(user="u9"))
    one_user.put(("prefs",), "theme", {"content": "dark"})
    assert [m.content for m in eng.memory.list("u9")] == ["dark"]
    assert one_user.list_namespaces() == [("prefs",)]
    # A user id that redaction would change (a phone number) is still the namespace's
    # label: the memory is that user's, and the item comes back under it.
    phone = ("memories", "415-555-0100")
    AgentCtxStore(eng).put(phone, "k", {"content": "hello"})
    assert [m.content for m in eng.memory.list("415-555-0100")] == ["hello"]
    assert [i.namespace for i in AgentCtxStore(eng).search(phone)] == [phone]
    assert AgentCtxStore(eng).list_namespaces(prefix=phone) == [phone]


def test_personal_data_in_a_value_is_stored_redacted(
    eng: ContextEngine, store: AgentCtxStore
) -> None:
    store.put(NS, "contact", {"content": "Mail me at ann@example.com", "phone": "+1 415 555 0100"})
    item = store.get(NS, "contact")
    assert item is not None
    stored = json.dumps(item.value) + json.dumps(
        [m.model_dump(mode="json") for m in eng.memory.list("u1")]
    )
    assert "ann@example.com" not in stored and "555 0100" not in stored
    assert item.value["content"].startswith("Mail me at ")
    # A key that is personal data is stored redacted; get still finds the item by it.
    store.put(NS, "ann@example.com", {"content": "hi"})
    by_email = store.get(NS, "ann@example.com")
    assert by_email is not None and by_email.key == "ann@example.com"
    assert "ann@example.com" not in json.dumps([m.data for m in eng.memory.list("u1")])


def test_a_batch_reads_before_it_writes_and_runs_async(store: AgentCtxStore) -> None:
    store.put(NS, "a", {"v": 1})
    results = store.batch(
        [PutOp(NS, "a", {"v": 2}), GetOp(NS, "a"), PutOp(NS, "a", {"v": 3}), SearchOp(NS)]
    )
    got = results[1]
    assert results[0] is None and got is not None and got.value == {"v": 1}  # type: ignore[union-attr]
    final = store.get(NS, "a")
    assert final is not None and final.value == {"v": 3}  # the last put wins

    async def roundtrip() -> Any:
        await store.aput(NS, "b", {"content": "async"})
        return await store.aget(NS, "b"), await store.asearch(NS, query="async")

    item, hits = asyncio.run(roundtrip())
    assert item.value == {"content": "async"} and [h.key for h in hits] == ["b"]


# LangMem -------------------------------------------------------------------------------


def test_langmem_tools_manage_and_search_memories(eng: ContextEngine, store: AgentCtxStore) -> None:
    langmem = pytest.importorskip("langmem")
    namespace = ("memories", "{langgraph_user_id}")
    manage = langmem.create_manage_memory_tool(namespace=namespace, store=store)
    search = langmem.create_search_memory_tool(namespace=namespace, store=store)
    config: Any = {"configurable": {"langgraph_user_id": "u1"}}

    created = manage.invoke({"content": "User's favourite city is Kyoto"}, config)
    memory_id = created.removeprefix("created memory ")
    manage.invoke({"content": "User is vegetarian"}, config)
    found = json.loads(search.invoke({"query": "favourite city"}, config))
    assert found[0]["key"] == memory_id and found[0]["value"] == {
        "content": "User's favourite city is Kyoto"
    }
    assert found[0]["namespace"] == ["memories", "u1"] and found[0]["score"] > 0

    manage.invoke(
        {"content": "User's favourite city is Osaka", "action": "update", "id": memory_id}, config
    )
    item = store.get(("memories", "u1"), memory_id)
    assert item is not None and item.value == {"content": "User's favourite city is Osaka"}
    manage.invoke({"action": "delete", "id": memory_id}, config)
    assert store.get(("memories", "u1"), memory_id) is None
    assert [m.content for m in eng.memory.list("u1")] == ["User is vegetarian"]
    # Another user's search does not see u1's memories.
    other: Any = {"configurable": {"langgraph_user_id": "u2"}}
    assert json.loads(search.invoke({"query": "vegetarian"}, other)) == []


def test_a_prebuilt_agent_uses_langmem_tools_on_the_store(
    eng: ContextEngine, store: AgentCtxStore
) -> None:
    langmem = pytest.importorskip("langmem")
    from langgraph.prebuilt import create_react_agent

    namespace = ("memories", "{langgraph_user_id}")
    tools = [
        langmem.create_manage_memory_tool(namespace=namespace),
        langmem.create_search_memory_tool(namespace=namespace),
    ]
    model = scripted(
        call("c1", "manage_memory", content="User's dog is called Rex"),
        "Noted.",
        call("c2", "search_memory", query="dog name"),
        "Your dog is Rex.",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(model, tools, store=store)
    config: Any = {"configurable": {"langgraph_user_id": "u1"}}
    graph.invoke({"messages": [("user", "Remember: my dog is Rex")]}, config)
    state = graph.invoke({"messages": [("user", "What is my dog called?")]}, config)
    assert [m.content for m in eng.memory.list("u1")] == ["User's dog is called Rex"]
    result = json.loads(state["messages"][-2].content)  # the search tool's answer
    assert [r["value"]["content"] for r in result] == ["User's dog is called Rex"]
