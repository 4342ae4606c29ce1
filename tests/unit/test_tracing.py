"""The trace context, spans, their OTLP JSON form and the receiver's store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from minikube_py.tracestore.store import SpanStore
from minikube_py.tracing import context, otlp
from minikube_py.tracing.setup import read_tracing_config
from minikube_py.tracing.tracer import ERROR, SERVER, Span, Tracer

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class Collect:
    def __init__(self) -> None:
        self.spans: list[Span] = []

    def export(self, span: Span) -> None:
        self.spans.append(span)


def test_a_traceparent_is_read_as_the_w3c_specification_says():
    found = context.parse(PARENT)
    assert found == context.SpanContext("0af7651916cd43dd8448eb211c80319c",
                                        "b7ad6b7169203331", True)
    assert found.traceparent() == PARENT
    assert context.parse(PARENT[:-2] + "00").sampled is False
    for bad in ("", "garbage", PARENT.replace("00-", "ff-", 1),
                "00-" + "0" * 32 + "-b7ad6b7169203331-01",
                "00-0af7651916cd43dd8448eb211c80319c-" + "0" * 16 + "-01",
                PARENT + "-extra"):
        assert context.parse(bad) is None, bad


def test_an_object_carries_its_trace_in_an_annotation():
    obj = {"metadata": {"annotations": {context.ANNOTATION: PARENT}}}
    assert context.of_object(obj) == context.parse(PARENT)
    assert context.of_object({"metadata": {}}) is None


def test_spans_nest_through_the_context_and_record_failures():
    collected = Collect()
    tracer = Tracer("test", collected)
    with tracer.span("outer", kind=SERVER, **{"k8s.name": "web"}) as outer:
        assert context.current() == outer.context
        with tracer.span("inner") as inner:
            inner.set("nodes", 2)
            inner.event("picked", node="node-1")
        with pytest.raises(RuntimeError), tracer.span("broken"):
            raise RuntimeError("no node fits")
    assert context.current() is None
    inner, broken, outer = collected.spans
    assert inner.context.trace_id == outer.context.trace_id == broken.context.trace_id
    assert inner.parent_id == outer.context.span_id and outer.parent_id == ""
    assert inner.attributes == {"nodes": 2} and inner.events[0][1:] == (
        "picked", {"node": "node-1"})
    assert broken.status == ERROR and broken.message == "RuntimeError: no node fits"
    assert outer.start_ns <= inner.start_ns <= inner.end_ns <= outer.end_ns


def test_a_span_continues_the_trace_it_is_given():
    collected = Collect()
    tracer = Tracer("test", collected)
    with tracer.span("child", parent=context.parse(PARENT)) as span:
        pass
    assert span.context.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert span.parent_id == "b7ad6b7169203331"
    late = tracer.start("late")
    late.continue_trace(context.parse(PARENT))
    assert late.context.trace_id == "0af7651916cd43dd8448eb211c80319c"


def test_a_tracer_without_exporter_records_nothing_and_leaves_no_context():
    tracer = Tracer("off")
    with tracer.span("anything") as span:
        assert not span.recording
        assert context.current() is None


def test_unsampled_traces_are_not_exported():
    collected = Collect()
    tracer = Tracer("test", collected, sampling=0.0)
    with tracer.span("root"), tracer.span("child"):
        pass
    with tracer.span("continued", parent=context.parse(PARENT)):
        pass
    assert [s.name for s in collected.spans] == ["continued"]


def test_spans_survive_the_trip_through_otlp_json():
    collected = Collect()
    tracer = Tracer("kube-scheduler", collected)
    with tracer.span("Bind", **{"k8s.name": "web", "nodes": 3, "ok": True, "score": 0.5,
                                "tried": ["a", "b"]}) as span:
        span.event("bound", node="node-1")
    request = otlp.encode("kube-scheduler", collected.spans)
    scope = request["resourceSpans"][0]["scopeSpans"][0]
    assert scope["spans"][0]["attributes"][1] == {"key": "nodes", "value": {"intValue": "3"}}
    (kept,) = otlp.decode(request)
    assert kept["object"] is None  # names no resource: k8s.name alone does not
    record = otlp.flatten(kept)
    assert record["service"] == "kube-scheduler" and record["name"] == "Bind"
    assert record["traceId"] == span.context.trace_id and record["parentSpanId"] == ""
    assert record["attributes"] == {"k8s.name": "web", "nodes": 3, "ok": True,
                                    "score": 0.5, "tried": ["a", "b"]}
    assert record["events"][0]["name"] == "bound"
    assert record["end"] >= record["start"] > 0
    with pytest.raises(ValueError):
        otlp.decode({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]})


def record(trace: str, span: str, start: int, **attributes: str) -> dict:
    """A span as the receiver keeps it (otlp.decode's form)."""
    (kept,) = otlp.decode({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": trace, "spanId": span, "name": span, "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1),
        "attributes": [{"key": k, "value": {"stringValue": v}}
                       for k, v in attributes.items()]}]}]}]})
    return kept


def test_the_store_finds_spans_by_trace_and_by_object_and_keeps_them_on_disk(tmp_path: Path):
    store = SpanStore(tmp_path, max_spans=100)
    pod = {"k8s.resource": "pods", "k8s.namespace": "default", "k8s.name": "web-1"}
    store.add([record("t1", "b", 2), record("t1", "a", 1, **pod), record("t2", "c", 3)])
    assert [r["spanId"] for r in store.trace("t1")] == ["a", "b"]
    assert store.traces_of("pods", "default", "web-1") == ["t1"]
    again = SpanStore(tmp_path, max_spans=100)
    again.load()
    assert again.count == 3 and again.traces_of("pods", "default", "web-1") == ["t1"]


def test_the_store_drops_its_oldest_spans_beyond_its_bound(tmp_path: Path):
    store = SpanStore(tmp_path, max_spans=8, segments=4)
    store.add([record(f"t{i}", f"s{i}", i) for i in range(20)])
    assert store.count <= 8
    assert store.trace("t0") == [] and store.trace("t19")
    assert len(list(tmp_path.glob("spans-*.jsonl"))) == 4


async def test_a_follower_gets_each_new_span_of_a_trace_that_comes_to_name_its_object(
        tmp_path: Path):
    store = SpanStore(tmp_path)
    queue = store.follow(set(), "pods/default/web-1")
    store.add([record("t1", "a", 1, **{"k8s.resource": "pods", "k8s.namespace": "default",
                                       "k8s.name": "web-1"}),
               record("t1", "b", 2), record("t2", "other", 3)])
    async with asyncio.timeout(2):
        got = [await queue.get() for _ in range(2)]
    assert [r["spanId"] for r in got] == ["a", "b"] and queue.empty()


def test_the_tracing_configuration_is_upstreams(tmp_path: Path):
    path = tmp_path / "tracing.yaml"
    path.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"
                    "endpoint: 127.0.0.1:4318\nsamplingRatePerMillion: 500000\n")
    assert read_tracing_config(path) == ("http://127.0.0.1:4318", 0.5)
    path.write_text("apiVersion: v1\nkind: Pod\n")
    with pytest.raises(ValueError, match="want kind TracingConfiguration"):
        read_tracing_config(path)
    path.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"
                    "samplingRatePerMillion: 2000000\n")
    with pytest.raises(ValueError, match="between 0 and 1000000"):
        read_tracing_config(path)


def test_a_deployment_does_not_copy_its_trace_to_its_replica_sets():
    """Each object's trace is its own: copying the Deployment's would make the deployment
    controller rewrite it on every sync, and the API server keep it back each time."""
    from minikube_py.controllers.deployment.util import (
        copy_deployment_annotations,
        set_deployment_annotations_to,
    )

    deployment = {"metadata": {"annotations": {context.ANNOTATION: PARENT, "team": "a"}}}
    replica_set = {"metadata": {"annotations": {context.ANNOTATION: "00-" + "1" * 32 + "-"
                                                + "2" * 16 + "-01"}}}
    assert copy_deployment_annotations(deployment, replica_set)
    assert replica_set["metadata"]["annotations"][context.ANNOTATION] != PARENT
    assert not copy_deployment_annotations(deployment, replica_set)  # nothing left to copy
    set_deployment_annotations_to(deployment, replica_set)  # a rollback
    assert deployment["metadata"]["annotations"][context.ANNOTATION] == PARENT
