"""mkctl trace's timeline: spans oldest first, indented under their parents, with the
attributes and events a reader needs."""

from __future__ import annotations

from minikube_py.mkctl.printers import timeline
from minikube_py.mkctl.tracelife import Follower, Life

START = 1_764_000_000_000_000_000  # ns


def span(span_id: str, parent: str, start_ms: float, duration_ms: float, service: str,
         name: str, events: list | None = None, **attributes: object) -> dict:
    start = START + int(start_ms * 1_000_000)
    return {"traceId": "t", "spanId": span_id, "parentSpanId": parent, "name": name,
            "service": service, "kind": 1, "start": start,
            "end": start + int(duration_ms * 1_000_000), "attributes": attributes,
            "events": events or [], "status": {}}


SPANS = [
    span("c", "b", 7, 2, "kube-apiserver", "create replicasets",
         **{"k8s.namespace": "default", "k8s.name": "web-1", "k8s.revision": 813}),
    span("a", "", 0, 4.1, "kube-apiserver", "create deployments",
         **{"k8s.namespace": "default", "k8s.name": "web", "user.name": "admin"}),
    span("b", "a", 5, 0.25, "kube-controller-manager", "deployment sync",
         **{"k8s.namespace": "default", "k8s.name": "web"}),
    span("d", "x-not-here", 9, 1500, "kube-scheduler", "schedule",
         events=[{"time": START, "name": "Filter",
                  "attributes": {"node": "node-1", "result": "fits"}},
                 {"time": START, "name": "Filter",
                  "attributes": {"node": "node-2", "result": "Insufficient cpu",
                                 "plugin": "NodeResourcesFit"}},
                 {"time": START, "name": "Score", "attributes": {
                     "node": "node-1", "score": 480, "TaintToleration": 300,
                     "NodeResourcesFit": 90, "NodeResourcesBalancedAllocation": 90}}],
         node="node-1"),
]


def test_spans_are_indented_under_their_parents_and_orphans_start_at_the_left():
    assert timeline.depths(SPANS) == {"a": 0, "b": 1, "c": 2, "d": 0}


def test_each_span_reads_as_its_name_object_and_telling_attributes():
    assert timeline.describe(SPANS[1]) == "create deployments default/web  user=admin"
    assert timeline.describe(SPANS[0]) == "create replicasets default/web-1  revision=813"
    failed = {**SPANS[2], "status": {"code": 2, "message": "Conflict"}}
    assert timeline.describe(failed) == "deployment sync default/web  error=Conflict"


def test_the_timeline_is_oldest_first_with_durations_and_events():
    rows = timeline.rows(SPANS)
    assert [row[1] for row in rows if row[1]] == ["0", "5", "7", "9"]
    assert [row[2] for row in rows if row[2]] == ["4.1ms", "250us", "2.0ms", "1.50s"]
    assert [row[4] for row in rows] == [
        "create deployments default/web  user=admin",
        "  deployment sync default/web",
        "    create replicasets default/web-1  revision=813",
        "schedule  node=node-1",
        "  Filter node-1: fits",
        "  Filter node-2: Insufficient cpu  plugin=NodeResourcesFit",
        "  Score node-1: 480  TaintToleration=300  NodeResourcesFit=90  "
        "NodeResourcesBalancedAllocation=90",
    ]


def test_the_table_pads_every_column_but_the_last():
    text = timeline.table(timeline.rows(SPANS[1:3]))
    header, first, second = text.splitlines()
    assert header.split() == list(timeline.HEADER)
    assert first.index("kube-apiserver") == second.index("kube-controller-manager")
    assert first.index("create") == second.index("  deployment")


# -- one object's life, and --follow's order (mkctl/tracelife.py) ---------------------------

SECOND = 1_000_000_000
LIFE = Life("pods", "default", "web", uid="uid-now", since=START + 100 * SECOND,
            trace_id="own")


def named(span_id: str, trace: str, start_s: float, parent: str = "", **attributes: object
          ) -> dict:
    found = span(span_id, parent, start_s * 1000, 1, "kubelet", "SyncPod", **{
        "k8s.resource": "pods", "k8s.namespace": "default", "k8s.name": "web", **attributes})
    return {**found, "traceId": trace}


def other(span_id: str, trace: str, start_s: float, parent: str = "") -> dict:
    return {**span(span_id, parent, start_s * 1000, 1, "kube-apiserver", "create pods"),
            "traceId": trace}


def test_a_life_is_its_own_trace_and_the_traces_that_name_its_uid_or_start_in_it():
    traces = [
        {"traceId": "own", "spans": [other("a", "own", 1)]},
        # an earlier pod of the same name: its uid, even in a span that starts in this life
        {"traceId": "old", "spans": [named("b", "old", 150, **{"k8s.uid": "uid-before"})]},
        # a span of this pod, its uid written
        {"traceId": "uid", "spans": [named("c", "uid", 50, **{"k8s.uid": "uid-now"})]},
        # a span without a uid counts by its time: before the life began, or in it
        {"traceId": "early", "spans": [named("d", "early", 99)]},
        {"traceId": "late", "spans": [named("e", "late", 101)]},
    ]
    assert [t["traceId"] for t in LIFE.traces(traces)] == ["own", "uid", "late"]


def test_follow_prints_in_start_order_once_each_span_waited_for_late_ones():
    follower = Follower(LIFE, hold=2 * SECOND, parent_wait=10 * SECOND)
    follower.add(other("second", "own", 102), now=0)
    assert follower.due(now=1 * SECOND) == []  # held: an earlier span may still come
    follower.add(other("first", "own", 101), now=1 * SECOND)
    assert follower.due(now=2 * SECOND) == []  # the late first span holds back the second
    assert [s["spanId"] for s, _ in follower.due(now=3 * SECOND)] == ["first", "second"]
    follower.add(other("first", "own", 101), now=4 * SECOND)  # the same span again
    assert follower.due(now=10 * SECOND) == []


def test_follow_waits_for_a_parent_so_that_its_children_print_under_it():
    """A CRI call ends, and is exported, before the SyncPod around it."""
    follower = Follower(LIFE, hold=2 * SECOND, parent_wait=10 * SECOND)
    follower.printed([other("request", "own", 100)])
    follower.add(named("cri", "own", 106, parent="sync"), now=0)
    assert follower.due(now=5 * SECOND) == []  # its parent is not here yet
    follower.add(named("sync", "own", 105, parent="request"), now=6 * SECOND)
    assert [(s["spanId"], depth) for s, depth in follower.due(now=8 * SECOND)] == [
        ("sync", 1), ("cri", 2)]
    follower.add(named("orphan", "own", 110, parent="never-exported"), now=9 * SECOND)
    assert follower.due(now=18 * SECOND) == []
    assert [(s["spanId"], depth) for s, depth in follower.due(now=19 * SECOND)] == [
        ("orphan", 0)]


def test_follow_keeps_another_life_out_until_a_span_ties_its_trace_to_this_one():
    follower = Follower(LIFE, hold=0, parent_wait=0)
    follower.add(named("old", "before", 150, **{"k8s.uid": "uid-before"}), now=0)
    follower.add(other("pods-write", "caused", 151), now=0)  # a trace not known yet
    assert [s["spanId"] for s, _ in follower.due(now=1)] == []
    follower.add(named("names-it", "caused", 152, **{"k8s.uid": "uid-now"}), now=1)
    assert [s["spanId"] for s, _ in follower.due(now=2)] == ["pods-write", "names-it"]
    assert follower.rest() == []  # the earlier pod's span is never printed
