"""The API server's spans, and the trace each object carries, with a real API server
(--tracing-config-file), etcd, the trace receiver and kubectl: a request becomes a span
that continues the client's traceparent; a created object records its trace; a later
write without a trace of its own joins it; tracing off changes nothing."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig
from minikube_py.controllers.endpointslice import EndpointSliceController
from minikube_py.controllers.manager import ControllerManager
from minikube_py.process import free_port
from minikube_py.tracing import context
from minikube_py.tracing.context import ANNOTATION
from minikube_py.tracing.exporter import OTLPExporter
from minikube_py.tracing.tracer import Tracer
from tests.api_helpers import eventually

Obj = dict[str, Any]
KUBECTL = str(Path(sys.executable).with_name("kubectl"))


@pytest.fixture(scope="module")
def receiver(fast_tmp: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "minikube_py.tracestore",
                                f"--data-dir={fast_tmp / 'traced-spans'}", f"--port={port}"])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module")
async def traced_server(etcd: EtcdProcess, receiver: str, fast_tmp: Path
                        ) -> AsyncIterator[Path]:
    config = fast_tmp / "tracing.yaml"
    config.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"
                      f"endpoint: {receiver.removeprefix('http://')}\n"
                      "samplingRatePerMillion: 1000000\n")
    async with APIServerProcess(
            [etcd.client_url], fast_tmp / "traced-apiserver.log",
            extra_args=("--disable-admission-plugins=ServiceAccount",
                        f"--tracing-config-file={config}")) as process:
        yield write_kubeconfig(fast_tmp / "traced.kubeconfig", process.url)


def kubectl(kubeconfig: Path, *args: str) -> str:
    result = subprocess.run([KUBECTL, f"--kubeconfig={kubeconfig}", *args],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout


async def spans_of(receiver: str, resource: str, namespace: str, name: str, count: int
                   ) -> list[Obj]:
    """Every span of the object's traces, once there are `count` (the server exports
    about once a second)."""
    url = (f"{receiver}/api/v1/traces?resource={resource}&namespace={namespace}"
           f"&name={name}")

    async def enough() -> list[Obj] | None:
        found = json.loads(await asyncio.to_thread(
            lambda: urllib.request.urlopen(url, timeout=5).read()))
        spans = [s for t in found["traces"] for s in t["spans"]]
        return spans if len(spans) >= count else None

    return await eventually(enough, timeout=15, what=f"{count} spans of {name}")


async def annotation(kubeconfig: Path, kind: str, name: str) -> context.SpanContext:
    obj = json.loads(await asyncio.to_thread(kubectl, kubeconfig, "get", kind, name,
                                             "-o", "json"))
    found = context.of_object(obj)
    assert found is not None, obj["metadata"].get("annotations")
    return found


async def test_a_created_object_records_the_span_of_the_request_that_made_it(
        traced_server: Path, receiver: str) -> None:
    await asyncio.to_thread(kubectl, traced_server, "create", "configmap", "traced-1",
                            "--from-literal=a=b")
    recorded = await annotation(traced_server, "configmap", "traced-1")
    (span,) = await spans_of(receiver, "configmaps", "default", "traced-1", 1)
    assert span["name"] == "create configmaps" and span["service"] == "kube-apiserver"
    assert span["traceId"] == recorded.trace_id and span["spanId"] == recorded.span_id
    assert span["parentSpanId"] == ""  # kubectl sends no traceparent: a new trace
    attributes = span["attributes"]
    assert attributes["user.name"] == "system:anonymous" or attributes["user.name"]
    assert attributes["k8s.verb"] == "create" and attributes["http.status_code"] == 201
    assert attributes["k8s.revision"] > 0


async def test_the_request_span_names_the_admission_plugins_each_phase_ran(
        traced_server: Path, receiver: str) -> None:
    """Admission is a step of the request: an attribute per phase lists the plugins the
    write passed, in the chain's order; a refused write names the plugin that refused it
    last."""
    await asyncio.to_thread(kubectl, traced_server, "run", "traced-admitted",
                            "--image=registry.k8s.io/pause:3.10")
    (span,) = await spans_of(receiver, "pods", "default", "traced-admitted", 1)
    phases = {phase: span["attributes"][f"admission.{phase}"].split(",")
              for phase in ("mutating", "validating")}
    assert phases["mutating"][:3] == ["LimitRanger", "Priority",
                                      "DefaultTolerationSeconds"], phases
    assert phases["validating"][:2] == ["NamespaceLifecycle", "LimitRanger"], phases

    refused = subprocess.run(
        [KUBECTL, f"--kubeconfig={traced_server}", "create", "configmap", "traced-refused",
         "-n", "no-such-namespace"], capture_output=True, text=True, timeout=30)
    assert 'namespaces "no-such-namespace" not found' in refused.stderr
    (span,) = await spans_of(receiver, "configmaps", "no-such-namespace", "traced-refused", 1)
    assert span["attributes"]["admission.validating"] == "NamespaceLifecycle"
    assert span["attributes"]["http.status_code"] == 404


def mkctl_trace(kubeconfig: Path, receiver: str, what: str) -> list[Obj]:
    result = subprocess.run(
        [sys.executable, "-m", "minikube_py.mkctl", f"--kubeconfig={kubeconfig}", "trace",
         what, f"--traces-url={receiver}", "-o", "json"],
        capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["traces"]


async def test_mkctl_trace_shows_the_life_of_the_object_that_has_the_name_now(
        traced_server: Path, receiver: str) -> None:
    """An object deleted and made again under its name: the receiver finds both lives'
    traces by the name, mkctl trace shows the present one's; once it is gone, both."""
    await asyncio.to_thread(kubectl, traced_server, "create", "configmap", "traced-twice")
    first = await annotation(traced_server, "configmap", "traced-twice")
    await asyncio.to_thread(kubectl, traced_server, "delete", "configmap", "traced-twice")
    await asyncio.sleep(1.1)  # creationTimestamp counts whole seconds
    await asyncio.to_thread(kubectl, traced_server, "create", "configmap", "traced-twice")
    second = await annotation(traced_server, "configmap", "traced-twice")
    await spans_of(receiver, "configmaps", "default", "traced-twice", 3)
    shown = await asyncio.to_thread(mkctl_trace, traced_server, receiver,
                                    "configmap/traced-twice")
    assert [trace["traceId"] for trace in shown] == [second.trace_id]
    await asyncio.to_thread(kubectl, traced_server, "delete", "configmap", "traced-twice")
    shown = await asyncio.to_thread(mkctl_trace, traced_server, receiver,
                                    "configmap/traced-twice")
    assert {trace["traceId"] for trace in shown} == {first.trace_id, second.trace_id}


async def test_later_writes_join_the_objects_trace_and_leave_its_record_alone(
        traced_server: Path, receiver: str) -> None:
    await asyncio.to_thread(kubectl, traced_server, "create", "configmap", "traced-2",
                            "--from-literal=a=b")
    first = await annotation(traced_server, "configmap", "traced-2")
    await asyncio.to_thread(kubectl, traced_server, "label", "configmap", "traced-2", "x=y")
    await asyncio.to_thread(kubectl, traced_server, "delete", "configmap", "traced-2")
    spans = await spans_of(receiver, "configmaps", "default", "traced-2", 3)
    by_verb = {s["attributes"]["k8s.verb"]: s for s in spans}
    assert {s["traceId"] for s in spans} == {first.trace_id}
    assert by_verb["patch"]["parentSpanId"] == first.span_id
    assert by_verb["delete"]["parentSpanId"] == first.span_id


async def test_a_client_span_is_continued_and_a_new_trace_moves_the_object(
        traced_server: Path, receiver: str) -> None:
    exporter = OTLPExporter(receiver, "test-controller", interval=0.05)
    tracer = Tracer("test-controller", exporter)
    async with Client.from_kubeconfig(traced_server, user_agent="tests") as client:
        config_maps = client.resource("configmaps")
        with tracer.span("sync traced-3") as sync:
            made = await config_maps.create({"metadata": {"name": "traced-3"},
                                             "data": {"a": "b"}}, "default")
        recorded = context.of_object(made)
        assert recorded is not None and recorded.trace_id == sync.context.trace_id
        # the same content again: a no-op write stays a no-op (no new revision)
        again = await config_maps.update(made)
        assert again["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
        with tracer.span("another trace") as other:
            moved = await config_maps.update({**again, "data": {"a": "c"}})
        assert context.of_object(moved).trace_id == other.context.trace_id
    await exporter.close()
    spans = await spans_of(receiver, "configmaps", "default", "traced-3", 3)
    server = next(s for s in spans if s["attributes"].get("k8s.verb") == "create")
    assert server["parentSpanId"] == sync.context.span_id
    assert any(s["name"] == "sync traced-3" and s["service"] == "test-controller"
               for s in spans)


async def test_without_tracing_objects_carry_no_trace(kubectl: Any, namespace: str) -> None:
    kubectl("create", "configmap", "untraced", "-n", namespace, "--from-literal=a=b")
    got = json.loads(kubectl("get", "configmap", "untraced", "-n", namespace, "-o",
                             "json").stdout)
    assert ANNOTATION not in (got["metadata"].get("annotations") or {})


async def test_a_pods_change_continues_into_the_endpoint_slice_it_changes(
        traced_server: Path, receiver: str) -> None:
    """A pod becoming ready queues its Service in the endpointslice controller: that sync
    is a span of the pod's trace (not of the Service's), and the EndpointSlice it writes
    moves to the pod's trace, where the proxy continues it."""
    exporter = OTLPExporter(receiver, "kube-controller-manager", interval=0.05)
    async with Client.from_kubeconfig(traced_server, user_agent="tests") as client:
        manager = ControllerManager(client, [EndpointSliceController],
                                    tracer=Tracer("kube-controller-manager", exporter))
        await asyncio.wait_for(manager.start(), 30)
        try:
            await client.resource("nodes").create({"metadata": {"name": "traced-node"}})
            await client.resource("services").create({
                "metadata": {"name": "traced-web"},
                "spec": {"selector": {"app": "traced-web"},
                         "ports": [{"port": 80, "targetPort": 8080}]}}, "default")
            pod = await client.resource("pods").create({
                "metadata": {"name": "traced-web-1", "labels": {"app": "traced-web"}},
                "spec": {"nodeName": "traced-node", "containers": [
                    {"name": "web", "image": "echo", "ports": [{"containerPort": 8080}]}]}},
                "default")
            pod_trace = context.of_object(pod)
            assert pod_trace is not None
            await client.resource("pods").update_status({**pod, "status": {
                "phase": "Running", "podIP": "10.244.9.9",
                "conditions": [{"type": "Ready", "status": "True"}]}})

            async def ready_slice() -> Obj | None:
                listed = await client.resource("endpointslices", "discovery.k8s.io").list(
                    "default", label_selector="kubernetes.io/service-name=traced-web")
                return next((s for s in listed["items"] for e in s.get("endpoints") or []
                             if e["conditions"].get("ready")), None)

            endpoint_slice = await eventually(ready_slice, timeout=15,
                                              what="a ready endpoint for traced-web-1")
        finally:
            await manager.stop()
    assert context.of_object(endpoint_slice).trace_id == pod_trace.trace_id
    spans = await spans_of(receiver, "pods", "default", "traced-web-1", 4)
    syncs = [s for s in spans if s["name"] == "endpointslice sync"]
    assert syncs and {s["traceId"] for s in syncs} == {pod_trace.trace_id}
    assert syncs[0]["attributes"]["k8s.resource"] == "services"
    assert syncs[0]["attributes"]["k8s.name"] == "traced-web"
    assert any(s["service"] == "kube-apiserver" and s["attributes"].get("k8s.resource")
               == "endpointslices" for s in spans)
