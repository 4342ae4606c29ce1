"""mkctl trace's timeline: spans oldest first, indented under their parents, with the
attributes and events a reader needs."""

from __future__ import annotations

from minikube_py.mkctl.printers import timeline

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
                 {"time": START, "name": "Score", "attributes": {"node": "node-1",
                                                                 "score": 180}}],
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
        "  Score node-1: 180",
    ]


def test_the_table_pads_every_column_but_the_last():
    text = timeline.table(timeline.rows(SPANS[1:3]))
    header, first, second = text.splitlines()
    assert header.split() == list(timeline.HEADER)
    assert first.index("kube-apiserver") == second.index("kube-controller-manager")
    assert first.index("create") == second.index("  deployment")
