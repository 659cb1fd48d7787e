"""Explain: the minimal pointstamps that hold a time at a port, with the path summaries that connect them."""

from __future__ import annotations

from tests.conftest import tracker_of
from tracker.analysis.explain import explain, holder_role
from tracker.reachability import Source, Target
from tracker.subgraph import Subgraph


def pipeline():
    root = Subgraph()
    root.add_operator(1, "input", inputs=0, outputs=1, capabilities=[[5]])
    root.add_operator(2, "map")
    root.add_operator(3, "sink", inputs=1, outputs=0)
    root.add_edge(Source(1, 0), Target(2, 0))
    root.add_edge(Source(2, 0), Target(3, 0))
    return root


def test_capability_upstream_implies_the_message_downstream():
    root = pipeline()
    root.receive([(Target(2, 0), 5, 2)])  # two messages at 5 in flight to map (produced under the capability)
    root.schedule()
    answer = explain(root, Target(3, 0), 5)
    assert answer.frontier == [5]
    holders = [(h.location, h.time, h.count, h.summary, h.results_in) for h in answer.holders]
    assert holders == [(Source(1, 0), 5, 1, 0, 5)]
    assert [(h.location, h.time, h.count) for h in answer.implied] == [(Target(2, 0), 5, 2)]
    # once the input moves on, the messages are what holds 5
    root.receive([(Source(1, 0), 5, -1), (Source(1, 0), 6, 1)])
    root.schedule()
    answer = explain(root, Target(3, 0), 5)
    assert [(h.location, h.time, h.count) for h in answer.holders] == [(Target(2, 0), 5, 2)]
    assert answer.implied == []


def test_time_not_held():
    root = pipeline()
    root.schedule()
    answer = explain(root, Target(3, 0), 4)
    assert not answer.held and answer.holders == [] and answer.frontier == [5]


def test_feedback_summary_is_reported():
    root = Subgraph()
    root.add_operator(1, "input", inputs=0, outputs=1, capabilities=[[0]])
    root.add_operator(2, "concat", inputs=2, outputs=1)
    root.add_operator(3, "feedback", summary=[[[1]]])
    root.add_edge(Source(1, 0), Target(2, 0))
    root.add_edge(Source(2, 0), Target(3, 0))
    root.add_edge(Source(3, 0), Target(2, 1))
    root.receive([(Source(1, 0), 0, -1), (Target(3, 0), 3, 1)])  # input closed, a record waits at the feedback
    root.schedule()
    answer = explain(root, Target(2, 1), 4)
    assert [(h.location, h.time, h.summary, h.results_in) for h in answer.holders] == [(Target(3, 0), 3, 1, 4)]
    assert explain(root, Target(2, 1), 3).holders == [], "the feedback adds one: 3 cannot arrive any more"


def test_two_incomparable_holders_in_a_product_scope():
    root = Subgraph()
    loop = root.add_scope(1, "loop", inputs=0, outputs=0, depth=2)
    loop.add_operator(1, "a", inputs=0, outputs=1, capabilities=[[(0, 3)]])
    loop.add_operator(2, "b", inputs=0, outputs=1, capabilities=[[(2, 0)]])
    loop.add_operator(3, "join", inputs=2, outputs=1)
    loop.add_edge(Source(1, 0), Target(3, 0))
    loop.add_edge(Source(2, 0), Target(3, 1))
    root.schedule()
    assert tracker_of(loop).frontier(Source(3, 0)) == [(0, 3), (2, 0)]
    answer = explain(loop, Source(3, 0), (2, 3))
    assert [(h.location, h.time) for h in answer.holders] == [(Source(1, 0), (0, 3)), (Source(2, 0), (2, 0))]
    assert [h.location for h in explain(loop, Source(3, 0), (1, 5)).holders] == [Source(1, 0)]


def test_hold_from_the_parent_scope():
    root = Subgraph()
    root.add_operator(1, "input", inputs=0, outputs=1, capabilities=[[7]])
    region = root.add_scope(2, "region", inputs=1, outputs=1, depth=1)
    region.add_operator(1, "inner")
    region.add_edge(Source(0, 0), Target(1, 0))
    region.add_edge(Source(1, 0), Target(0, 0))
    root.add_edge(Source(1, 0), Target(2, 0))
    root.schedule()
    answer = explain(region, Target(1, 0), 7)
    assert [(h.location, h.time, h.from_parent) for h in answer.holders] == [(Source(0, 0), 7, True)]
    assert answer.to_json()["holders"][0]["location"] == ["out", 0, 0]


def test_holder_roles_say_what_holds_and_where_to_look_next():
    root = Subgraph()
    root.add_operator(1, "input", inputs=0, outputs=1, capabilities=[[7]])
    region = root.add_scope(2, "region", inputs=1, outputs=1, depth=1)
    region.add_operator(1, "inner", attrs={"stage": 4})
    region.add_edge(Source(0, 0), Target(1, 0))
    region.add_edge(Source(1, 0), Target(0, 0))
    root.add_operator(3, "sink", inputs=1, outputs=0)
    root.add_edge(Source(1, 0), Target(2, 0))
    root.add_edge(Source(2, 0), Target(3, 0))
    region.receive([(Target(1, 0), 7, 1)])  # a message waiting at inner's input
    root.schedule()

    [capability] = explain(root, Target(2, 0), 7).holders
    assert holder_role(root, capability).to_json() == {"what": "capability", "operator": "input", "attrs": {},
                                                       "next": None}
    # the input moves on: what holds the sink is the nested scope, and the explanation continues inside it
    root.receive([(Source(1, 0), 7, -1), (Source(1, 0), 9, 1)])
    root.schedule()
    [nested] = explain(root, Target(3, 0), 7).holders
    role = holder_role(root, nested)
    assert (role.kind, role.operator, role.next_scope, role.next_port) == ("nested-scope", "region", (2,), Target(0, 0))
    [message] = explain(region, Target(0, 0), 7).holders
    assert holder_role(region, message).to_json() == {"what": "message", "operator": "inner", "attrs": {"stage": 4},
                                                      "next": None}
    # inside the region, the parent's frontier at its input holds 9: look at the region's input port in the root
    [outside] = [h for h in explain(region, Target(1, 0), 9).holders if h.from_parent]
    role = holder_role(region, outside)
    assert (role.kind, role.operator, role.next_scope, role.next_port) == ("parent-frontier", "scope input", (),
                                                                           Target(2, 0))
