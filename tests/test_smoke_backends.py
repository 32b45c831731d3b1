from agentctx import ContextEngine


def test_roundtrip(engine: ContextEngine, png: bytes) -> None:
    session = engine.create_session(user_id="u1", agent_id="helper")
    with session.turn() as turn:
        turn.add_message("user", "Book the cheapest flight", metadata={"k": "v"})
        call = turn.add_tool_call("screenshot", {"region": "full"})
        turn.add_tool_result(call.call_id, content="ok", images=[png])
    events = session.events()
    assert [e.seq for e in events] == [1, 2, 3]
    assert session.verify().ok
    assert engine.restore_image(events[2].images[0].image_id, user_id="u1") == png
