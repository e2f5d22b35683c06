"""Listing runs by id prefix, and a flow's sessions from it (flows.list_sessions); both backends."""

from __future__ import annotations

from chainreact.flows import list_sessions
from chainreact.state import Store
from chainreact.types.messages import assistant, user


async def test_runs_by_prefix_are_only_those_whose_id_starts_with_it(store: Store) -> None:
    for run_id in ("flow:f:a", "flow:f:b", "flow:fx:c", "flow:g:d", "flowmem:flow:f:a", "r1", "flow:f_%:e"):
        await store.save_run(run_id, {"node": "n"}, status="interrupted")
    assert sorted(r.run_id for r in await store.runs(prefix="flow:f:")) == ["flow:f:a", "flow:f:b"]
    # the prefix's own LIKE wildcards are plain characters
    assert [r.run_id for r in await store.runs(prefix="flow:f_%:")] == ["flow:f_%:e"]
    assert [r.run_id for r in await store.runs(prefix="flow:f:", limit=1)] == ["flow:f:b"]  # newest first
    assert [r.run_id for r in await store.runs(prefix="flow:f:", status="done")] == []
    await store.save_run("flow:f:a", {"node": "m"}, status="done")
    assert [r.run_id for r in await store.runs(prefix="flow:f:", status="done")] == ["flow:f:a"]
    assert [r.run_id for r in await store.runs(prefix="flow:f:")] == ["flow:f:a", "flow:f:b"]
    assert len(await store.runs(prefix="", limit=100)) == 7  # no prefix: every run
    assert await store.runs(prefix="nothing:") == []


async def test_a_flows_sessions_newest_first_with_their_node_and_conversation_size(store: Store) -> None:
    await store.save_run("flow:help:ann", {"node": "agent", "ended": False}, status="interrupted")
    await store.append("flow:help:ann", [user("My shoes are late"), assistant("Noted")])
    await store.save_run("flow:help:bob", {"node": "bye", "ended": True}, status="done")
    await store.save_run("flow:other:cy", {"node": "x"}, status="interrupted")
    got = await list_sessions(store, "help", "greet")
    assert [(s.session, s.node, s.ended, s.messages) for s in got] == [
        ("bob", "greet", True, 0),  # ended: its next message starts again at the start node
        ("ann", "agent", False, 2)]
    assert got[0].updated_at >= got[1].updated_at > 0
    assert got[1].to_dict() == {"session": "ann", "node": "agent", "ended": False,
                                "updated_at": got[1].updated_at, "messages": 2}
    assert [s.session for s in await list_sessions(store, "help", "greet", limit=1)] == ["bob"]
    assert await list_sessions(store, "nobody", "greet") == []


async def test_messages_kept_under_a_nodes_own_memory_id_are_counted(store: Store) -> None:
    # The shipped support flow keeps its turns under "support-{{user.id}}": counted under the session's key
    # only, its sessions showed "0 messages kept" (this test failed so before memory_keys).
    from chainreact.flows import load_flow, memory_keys

    flow = load_flow({"id": "help", "nodes": [
        {"name": "greet", "type": "message", "start": True, "message": "Hi",
         "transition": {"targetId": "agent"}},
        {"name": "agent", "type": "aiagent", "userMessage": "{{userInput}}", "output": {"schema": {}},
         "memory": {"memoryId": "help-{{user.id}}"}},
        {"name": "plain", "type": "aiagent", "userMessage": "{{userInput}}", "output": {"schema": {}}}]})
    await store.save_run("flow:help:ann", {"node": "agent", "ended": False, "user": {"id": "u7"}},
                         status="interrupted")
    await store.append("help-u7", [user("My shoes are late"), assistant("Noted")] * 3)
    await store.append("flow:help:ann", [user("and a survey"), assistant("5")])
    assert memory_keys(flow, "flow:help:ann", "ann", {"user": {"id": "u7"}}) == ["flow:help:ann", "help-u7"]
    got = await list_sessions(store, "help", "greet", definition=flow)
    assert [(s.session, s.messages) for s in got] == [("ann", 8)]
    assert [s.messages for s in await list_sessions(store, "help", "greet")] == [2]  # its own key only
