"""The API server's spans, and the trace each object carries, with a real API server
(--tracing-config-file), etcd, the trace receiver, kubectl and kr8s: a request becomes a
span that continues the client's traceparent; a created object records its trace; a later
write without a trace of its own joins it; tracing off changes nothing. Clients never see
the trace an object carries; the components, which ask for it, do."""

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
import yaml
from kr8s.asyncio.objects import Pod

from minikube_py.api import Obj
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig
from minikube_py.controllers.endpointslice import EndpointSliceController
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.volume.persistentvolume import PersistentVolumeController
from minikube_py.mkctl.printers import timeline
from minikube_py.process import free_port
from minikube_py.provisioner.localpath import PROVISIONER_NAME, LocalPathProvisioner
from minikube_py.scheduler.config import default_configuration
from minikube_py.scheduler.plugins.registry import IN_TREE_PLUGINS
from minikube_py.scheduler.scheduler import Scheduler
from minikube_py.tracing import context
from minikube_py.tracing.context import ANNOTATION
from minikube_py.tracing.exporter import OTLPExporter
from minikube_py.tracing.setup import close_tracer
from minikube_py.tracing.tracer import Tracer
from tests.api_helpers import eventually, kr8s_on
from tests.test_persistentvolume_controller import claim
from tests.test_scheduler import make_node, make_pod

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


def as_components_see_it(server: str, path: str) -> Obj:
    """GET path as the components do: asking for the objects' trace context."""
    request = urllib.request.Request(
        f"{server}{path}", headers={context.OBJECT_HEADER: context.INCLUDE})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def server_of(kubeconfig: Path) -> str:
    return yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]


async def annotation(kubeconfig: Path, kind: str, name: str) -> context.SpanContext:
    """The object's trace, as the components get it; kubectl never sees it."""
    plural = {"configmap": "configmaps", "pod": "pods"}[kind]
    path = f"/api/v1/namespaces/default/{plural}/{name}"
    obj = await asyncio.to_thread(as_components_see_it, server_of(kubeconfig), path)
    found = context.of_object(obj)
    assert found is not None, obj["metadata"].get("annotations")
    shown = json.loads(await asyncio.to_thread(kubectl, kubeconfig, "get", kind, name,
                                               "-o", "json"))
    assert ANNOTATION not in (shown["metadata"].get("annotations") or {})
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
    async with Client.from_kubeconfig(traced_server, user_agent="tests",
                                      trace_context=True) as client:
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


async def test_without_tracing_objects_carry_no_trace(
        kubectl: Any, namespace: str, apiserver: APIServerProcess) -> None:
    kubectl("create", "configmap", "untraced", "-n", namespace, "--from-literal=a=b")
    got = as_components_see_it(apiserver.url,
                               f"/api/v1/namespaces/{namespace}/configmaps/untraced")
    assert ANNOTATION not in (got["metadata"].get("annotations") or {})


async def test_a_pods_change_continues_into_the_endpoint_slice_it_changes(
        traced_server: Path, receiver: str) -> None:
    """A pod becoming ready queues its Service in the endpointslice controller: that sync
    is a span of the pod's trace (not of the Service's), and the EndpointSlice it writes
    moves to the pod's trace, where the proxy continues it."""
    exporter = OTLPExporter(receiver, "kube-controller-manager", interval=0.05)
    async with Client.from_kubeconfig(traced_server, user_agent="tests",
                                      trace_context=True) as client:
        manager = ControllerManager(client, [EndpointSliceController],
                                    tracer=Tracer("kube-controller-manager", exporter))
        async with asyncio.timeout(30):
            await manager.start()
        try:
            await client.resource("nodes").create({"metadata": {"name": "traced-node"}})
            await client.resource("services").create({
                "metadata": {"name": "traced-web"},
                "spec": {"selector": {"app": "traced-web"},
                         "ports": [{"port": 80, "targetPort": 8080}]}}, "default")
            slices = client.resource("endpointslices", "discovery.k8s.io")

            async def service_synced() -> bool:
                # the controller knows the Service (its first slice is written, in the
                # Service's trace) before the pod comes: otherwise a Service its
                # informer sees late is synced after the pod, in the Service's trace
                listed = await slices.list(
                    "default", label_selector="kubernetes.io/service-name=traced-web")
                return bool(listed["items"])

            await eventually(service_synced, timeout=15, what="traced-web's first slice")
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


def no_trace_in(obj: Obj) -> bool:
    return "tracing.minikube-py.io" not in json.dumps(obj)


async def test_a_client_never_sees_the_trace_its_objects_carry(
        traced_server: Path, receiver: str) -> None:
    """A pod kr8s creates with no annotations has none in any answer: the create, a get,
    a list (plain and by selector), a watch event, a patch, a Table. The components still
    get the trace, and it outlives the client's writes."""
    async with kr8s_on(traced_server) as api:
        pod = await Pod({"metadata": {"name": "traced-hidden", "labels": {"hide": "me"}},
                         "spec": {"containers": [{"name": "c", "image": "pause"}]}},
                        namespace="default", api=api)
        await pod.create()
        assert "annotations" not in pod.raw["metadata"], pod.raw["metadata"]
        recorded = await annotation(traced_server, "pod", "traced-hidden")
        await pod.refresh()
        assert "annotations" not in pod.raw["metadata"]
        listed = [p.raw async for p in api.async_get("pods", namespace="default")]
        selected = [p.raw async for p in api.async_get("pods", namespace="default",
                                                       label_selector={"hide": "me"})]
        assert [p["metadata"]["name"] for p in selected] == ["traced-hidden"]
        assert all(no_trace_in(p) for p in listed + selected)

        async def first_change() -> tuple[str, Obj]:
            async for kind, changed in api.async_watch(
                    "pods", namespace="default", label_selector={"hide": "me"},
                    since=pod.raw["metadata"]["resourceVersion"]):
                return kind, changed.raw
            raise AssertionError("the watch ended without an event")

        async with asyncio.timeout(20):
            watching = asyncio.create_task(first_change())
            await asyncio.sleep(0)
            await pod.patch({"metadata": {"labels": {"seen": "yes"}}})
            assert "annotations" not in pod.raw["metadata"]
            kind, event_object = await watching
    assert kind == "MODIFIED" and event_object["metadata"]["labels"]["seen"] == "yes"
    assert "annotations" not in event_object["metadata"]
    request = urllib.request.Request(
        f"{server_of(traced_server)}/api/v1/namespaces/default/pods/traced-hidden"
        "?includeObject=Object", headers={"Accept": "application/json;as=Table;v=v1;"
                                                    "g=meta.k8s.io"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        rows = json.load(answer)["rows"]
    assert rows and no_trace_in(rows)  # a Table row's object, kubectl get's way to ask
    kept = await annotation(traced_server, "pod", "traced-hidden")
    assert kept == recorded  # the patch left it out, and it stayed


async def test_apply_records_no_trace_in_last_applied_nor_managed_fields(
        traced_server: Path, receiver: str) -> None:
    """kubectl apply's last-applied configuration is the file's; server-side apply's
    managedFields, even after a write that moved the object to another trace, name no
    trace context: nobody owns it."""
    manifest = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: traced-applied\n"
                "data:\n  a: b\n")
    for flags in ((), ("--server-side",)):
        name = "traced-applied" + ("-ssa" if flags else "")
        body = manifest.replace("traced-applied", name)
        await asyncio.to_thread(lambda b=body, f=flags: subprocess.run(
            [KUBECTL, f"--kubeconfig={traced_server}", "apply", *f, "-f", "-"], input=b,
            capture_output=True, text=True, timeout=30, check=True))
        shown = json.loads(await asyncio.to_thread(
            kubectl, traced_server, "get", "configmap", name, "-o", "json",
            "--show-managed-fields"))
        assert no_trace_in(shown), shown["metadata"]
    exporter = OTLPExporter(receiver, "test-controller", interval=0.05)
    async with Client.from_kubeconfig(traced_server, user_agent="mover",
                                      trace_context=True) as client:
        config_maps = client.resource("configmaps")
        current = await config_maps.get("traced-applied-ssa", "default")
        before = context.of_object(current)
        with Tracer("test-controller", exporter).span("another trace") as other:
            moved = await config_maps.update({**current, "data": {"a": "c"}})
    await exporter.close()
    assert before is not None and context.of_object(moved).trace_id == other.context.trace_id
    managers = [entry["manager"] for entry in moved["metadata"]["managedFields"]]
    assert "mover" in managers and no_trace_in(moved["metadata"]["managedFields"])


async def test_an_update_that_leaves_the_trace_context_out_keeps_it(
        apiserver: APIServerProcess, kubeconfig: Path, namespace: str) -> None:
    """Tracing off, an object that carries a trace (a component wrote it so) keeps it
    through a kr8s JSON patch that replaces every annotation: clients cannot see it, so
    they cannot be asked to send it back."""
    traceparent = f"00-{'d' * 32}-{'e' * 16}-01"
    async with Client.from_kubeconfig(kubeconfig, trace_context=True) as client:
        await client.resource("configmaps").create(
            {"metadata": {"name": "kept", "annotations": {ANNOTATION: traceparent}}},
            namespace)
    async with kr8s_on(kubeconfig) as api:
        (config_map,) = [c async for c in api.async_get("configmaps", "kept",
                                                        namespace=namespace)]
        assert "annotations" not in config_map.raw["metadata"]
        await config_map.patch([{"op": "add", "path": "/metadata/annotations",
                                 "value": {"note": "mine"}}], type="json")
        assert config_map.raw["metadata"]["annotations"] == {"note": "mine"}
    stored = as_components_see_it(apiserver.url,
                                  f"/api/v1/namespaces/{namespace}/configmaps/kept")
    assert stored["metadata"]["annotations"] == {"note": "mine", ANNOTATION: traceparent}


SPAN_COLUMN = sum(width + 3 for width in timeline.FOLLOW_WIDTHS)  # where SPAN starts


async def test_mkctl_trace_follow_shows_this_life_in_time_order_and_nested(
        traced_server: Path, receiver: str) -> None:
    """--follow on an object made again under its name: the earlier life's spans stay out,
    even one that comes while following; spans that come late are printed where they
    started, and a child sent before its parent is printed under it."""
    await asyncio.to_thread(kubectl, traced_server, "create", "configmap", "traced-followed")
    gone = as_components_see_it(server_of(traced_server),
                                "/api/v1/namespaces/default/configmaps/traced-followed")
    await asyncio.to_thread(kubectl, traced_server, "delete", "configmap", "traced-followed")
    await asyncio.to_thread(kubectl, traced_server, "create", "configmap", "traced-followed")
    now = await annotation(traced_server, "configmap", "traced-followed")
    await spans_of(receiver, "configmaps", "default", "traced-followed", 3)
    process = subprocess.Popen(
        [sys.executable, "-m", "minikube_py.mkctl", f"--kubeconfig={traced_server}", "trace",
         "configmap/traced-followed", f"--traces-url={receiver}", "--follow"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    printed: list[str] = []
    try:
        assert process.stdout is not None
        reader = asyncio.create_task(asyncio.to_thread(
            lambda: [printed.append(line.rstrip("\n")) for line in process.stdout]))
        await eventually(lambda: asyncio.sleep(0, len(printed) >= 2), timeout=15,
                         what="the life so far")
        exporter = OTLPExporter(receiver, "test-controller", interval=0.05)
        tracer = Tracer("test-controller", exporter)
        names = {"k8s.resource": "configmaps", "k8s.namespace": "default",
                 "k8s.name": "traced-followed"}
        earlier = tracer.start("step earlier", parent=now, attributes=names)
        later = tracer.start("step later", parent=now, attributes=names)
        parent = tracer.start("step parent", parent=now, attributes=names)
        child = tracer.start("step child", parent=parent.context)
        stale = tracer.start("step of the earlier life", parent=context.of_object(gone),
                             attributes={**names, "k8s.uid": gone["metadata"]["uid"]})
        for span in (later, child, stale):  # sent first, though they started later
            span.end()
        await exporter.flush()  # a batch of their own: the receiver has them first
        for span in (earlier, parent):
            span.end()
        await exporter.close()

        def followed() -> list[str] | None:
            shown = [line[SPAN_COLUMN:] for line in printed if is_step(line)]
            return shown if len(shown) >= 4 else None

        shown = await eventually(lambda: asyncio.sleep(0, followed()), timeout=20,
                                 what="the followed spans")
    finally:
        process.terminate()
        process.wait(10)
        await reader
    history = [line for line in printed[1:next(i for i, line in enumerate(printed)
                                                if is_step(line))]
               if line[:12].strip()]  # span rows, not the admission rows under them
    assert [line[SPAN_COLUMN:].split("  ")[0] for line in history] == [
        "create configmaps default/traced-followed"], printed  # not the earlier life's
    order = [line.strip().split(" default/")[0] for line in shown]
    assert order == ["step earlier", "step later", "step parent",
                     "step child"], shown
    depth = {line.strip().split(" default/")[0]: len(line) - len(line.lstrip())
             for line in shown}
    assert depth["step child"] == depth["step parent"] + 2, shown
    assert not any("earlier life" in line for line in printed), printed


def is_step(line: str) -> bool:
    """A line of a span the follow test sent (its SPAN column starts "step ")."""
    return line[SPAN_COLUMN:].strip().startswith("step ")


async def test_a_claims_path_through_scheduler_controller_and_provisioner_is_one_trace(
        traced_server: Path, receiver: str, fast_tmp: Path) -> None:
    """A claim made in a StatefulSet's sync, and a pod using it: the scheduler's PreBind
    (VolumeBinding) writes the selected node, the provisioner's "provision" creates the
    PersistentVolume, the PV controller's syncs of the claim and of the volume bind them;
    every one is a span of the StatefulSet's trace, the volume carries it too."""
    tracers = {name: Tracer(name, OTLPExporter(receiver, name, interval=0.05))
               for name in ("statefulset", "kube-scheduler", "kube-controller-manager",
                            "local-path-provisioner")}
    names = {"node": "traced-storage-node", "class": "traced-local",
             "scheduler": "traced-storage-scheduler"}

    async def whole_path() -> list[Obj] | None:
        spans = await spans_of(receiver, "persistentvolumeclaims", "default",
                               "traced-data", 1)
        names_found = {(s["service"], s["name"]) for s in spans}
        wanted = {("local-path-provisioner", "provision"),
                  ("kube-scheduler", "PreBind VolumeBinding"),
                  ("kube-controller-manager", "persistentvolume-binder sync")}
        return spans if wanted <= names_found and any(
            s["attributes"].get("k8s.name") == volume_name for s in spans
            if s["name"] == "persistentvolume-binder sync") and any(
            is_volume_create(s) for s in spans) else None

    def is_volume_create(span: Obj) -> bool:
        return (span["service"] == "kube-apiserver"
                and span["attributes"].get("k8s.verb") == "create"
                and span["attributes"].get("k8s.resource") == "persistentvolumes")

    async with Client.from_kubeconfig(traced_server, user_agent="tests",
                                      trace_context=True) as client:
        node = make_node(names["node"])
        created = await client.resource("nodes").create(node)
        await client.resource("nodes").update_status({**created, "status": node["status"]})
        await client.resource("storageclasses", "storage.k8s.io").create({
            "metadata": {"name": names["class"]}, "provisioner": PROVISIONER_NAME,
            "volumeBindingMode": "WaitForFirstConsumer"})
        manager = ControllerManager(client, [PersistentVolumeController],
                                    tracer=tracers["kube-controller-manager"])
        informers = SharedInformerFactory(client)
        recorder = EventRecorder(client, PROVISIONER_NAME)
        provisioner = LocalPathProvisioner(client, informers, recorder, fast_tmp / "nodes",
                                           tracer=tracers["local-path-provisioner"])
        config = default_configuration()
        config.profiles[0].scheduler_name = names["scheduler"]
        scheduler = Scheduler(client, config, IN_TREE_PLUGINS,
                              tracer=tracers["kube-scheduler"])
        informers.start()
        running = None
        try:
            async with asyncio.timeout(30):
                await manager.start()
                await scheduler.start()
                await informers.wait_for_cache_sync()
            running = asyncio.create_task(provisioner.run())
            with tracers["statefulset"].span("statefulset sync") as sync:
                await client.resource("persistentvolumeclaims").create(
                    claim("traced-data", names["class"]), "default")
                await client.resource("pods").create(make_pod(
                    "traced-db-0", scheduler_name=names["scheduler"], volumes=[
                        {"name": "data", "persistentVolumeClaim": {
                            "claimName": "traced-data"}}]), "default")

            async def bound() -> Obj | None:
                found = await client.resource("persistentvolumeclaims").get(
                    "traced-data", "default")
                return found if (found.get("status") or {}).get("phase") == "Bound" else None

            bound_claim = await eventually(bound, timeout=30, what="traced-data Bound")
            volume_name = bound_claim["spec"]["volumeName"]
            volume = await client.resource("persistentvolumes").get(volume_name)
            # while the components run: the PV controller syncs the volume a moment after
            # the claim is Bound (on the volume's update), and that sync is on the path
            spans = await eventually(whole_path, timeout=60, what="the claim's whole path")
        finally:
            if running is not None:
                running.cancel()
                await asyncio.gather(running, return_exceptions=True)
            await scheduler.stop()
            await manager.stop()
            await informers.stop()
            await recorder.stop()
            for tracer in tracers.values():
                await close_tracer(tracer)
    assert context.of_object(volume).trace_id == sync.context.trace_id

    assert {s["traceId"] for s in spans} == {sync.context.trace_id}
    by_id = {s["spanId"]: s for s in spans}
    provision = next(s for s in spans if s["name"] == "provision")
    assert provision["attributes"]["node"] == names["node"]
    created_volume = next(s for s in spans if is_volume_create(s))
    assert created_volume["parentSpanId"] == provision["spanId"]
    pre_bind = next(s for s in spans if s["name"] == "PreBind VolumeBinding")
    assert by_id[pre_bind["parentSpanId"]]["name"] == "bind"
    assert any(event["name"] == "bound" and event["attributes"]["volume"] == volume_name
               for event in pre_bind["events"])
    selected = next(s for s in spans if s["attributes"].get("k8s.verb") == "update"
                    and s["parentSpanId"] == pre_bind["spanId"])
    assert selected["attributes"]["k8s.name"] == "traced-data"
