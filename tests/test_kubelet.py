"""The kubelet end to end: real containerd, runc and CNI; pods bound to the node by name.

One kubelet runs in the test process for the module, on the session's containerd node
(tests/node_fixtures.py), with back-offs shortened to 1 s doubling to 8 s so crash loops
fit in a test. Every pod lives in the test's own namespace.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.logs import level_of
from minikube_py.client.rest import Client
from minikube_py.cluster.components import KubeletProcess
from minikube_py.cri import RemoteRuntime
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.kubelet import KubeletConfig
from minikube_py.kubelet.metrics import parse_rfc3339
from minikube_py.process import free_port
from tests.api_helpers import eventually
from tests.node_fixtures import KubeletNode, delete_node

pytestmark = pytest.mark.slow
BUSYBOX = "localhost/busybox:1.36"
ECHO = "localhost/echo:1.0"


@pytest.fixture(scope="module")
async def node(containerd_node: Any, kubeconfig: Path, fast_tmp: Path,
               apiserver: Any) -> AsyncIterator[KubeletNode]:
    name = f"kubelet-test-{os.getpid()}"
    root = fast_tmp / "kubelet" / name
    root.mkdir(parents=True)
    config = KubeletConfig(node_name=name, root_dir=root, logs_root=root / "logs",
                           pod_cidr=containerd_node.pod_cidr, address="127.0.0.1",
                           port=free_port(), eviction_hard="memory.available<1Mi",
                           backoff_initial=1.0, backoff_max=8.0, sync_frequency=10.0)
    running = KubeletNode(config, kubeconfig, containerd_node.endpoint)
    await running.start()
    yield running
    await running.stop()
    await delete_node(kubeconfig, name)


def make_pod(name: str, node: KubeletNode, containers: list[Obj], **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node.name, "containers": containers,
                     "terminationGracePeriodSeconds": 2, **spec}}


def shell(name: str, script: str, **extra: Any) -> Obj:
    return {"name": name, "image": BUSYBOX, "command": ["sh", "-c", script], **extra}


async def create(api: Client, namespace: str, pod: Obj) -> Obj:
    return await api.resource("pods").create(pod, namespace)


async def pod_where(api: Client, namespace: str, name: str, check: Any,
                    timeout: float = 30.0, what: str = "") -> Obj:
    async def probe() -> Obj | None:
        pod = await api.resource("pods").get(name, namespace)
        return pod if check(pod) else None
    return await eventually(probe, timeout=timeout, interval=0.1,
                            what=what or f"pod {name} to match")


def container(pod: Obj, name: str | None = None) -> Obj:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return next(s for s in statuses if name is None or s["name"] == name)


def is_running_and_ready(pod: Obj) -> bool:
    conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
    return pod.get("status", {}).get("phase") == "Running" and conditions.get("Ready") == "True"


async def http_get(url: str, timeout: float = 30.0) -> str:
    """GET `url`; `timeout` bounds a failure only (a kubelet's /stats/summary beside a pod
    that burns a core took over 3 s once, on a loaded machine)."""
    async with aiohttp.ClientSession() as session, session.get(
            url, timeout=aiohttp.ClientTimeout(total=timeout)) as answer:
        return await answer.text()


async def pod_log(api: Client, namespace: str, name: str, **params: str) -> str:
    async with api.session.get(
            f"{api.config.server}/api/v1/namespaces/{namespace}/pods/{name}/log",
            params=params) as answer:
        return await answer.text()


async def events_for(api: Client, namespace: str, name: str) -> list[Obj]:
    listing = await api.resource("events").list(namespace)
    return [e for e in listing["items"] if e["involvedObject"]["name"] == name]


async def test_pod_serves_http_on_its_pod_ip(node, api_client, namespace):
    await create(api_client, namespace, make_pod("web", node, [{
        "name": "echo", "image": ECHO, "ports": [{"containerPort": 8080}],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        # Ready without a probe means started, not listening yet
        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
    }]))
    pod = await pod_where(api_client, namespace, "web", is_running_and_ready)
    status = pod["status"]
    assert status["hostIP"] == "127.0.0.1" and status["qosClass"] == "BestEffort"
    prefix = node.config.pod_cidr.rsplit(".", 2)[0]
    assert status["podIP"].startswith(prefix + ".")
    echo = container(pod)
    assert echo["containerID"].startswith("containerd://") and echo["imageID"]
    assert echo["started"] and echo["restartCount"] == 0
    answer = await http_get(f"http://{status['podIP']}:8080/hello")
    assert "web" in answer and status["podIP"] in answer

    async def request_logged() -> bool:  # the echo server logs each request line
        return "GET /hello HTTP/1.1 200" in await pod_log(api_client, namespace, "web")

    await eventually(request_logged, what="the request in the pod's log")
    reasons = {e["reason"] for e in await events_for(api_client, namespace, "web")}
    assert {"Pulled", "Created", "Started"} <= reasons


async def test_the_kubelet_keeps_a_csi_node_owned_by_its_node(node, api_client):
    async def csi_node() -> Obj | None:
        try:
            return await api_client.resource("csinodes", "storage.k8s.io").get(node.name)
        except NotFound:
            return None

    created = await eventually(csi_node, what="the kubelet's CSINode")
    registered = await api_client.resource("nodes").get(node.name)
    assert created["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": node.name,
         "uid": registered["metadata"]["uid"]}]
    assert created["spec"] == {"drivers": []}


async def test_sync_loop_logs_each_pod_it_is_given_at_verbosity_2(
        node, api_client, namespace, caplog: pytest.LogCaptureFixture):
    with caplog.at_level(level_of(2), logger="minikube_py.kubelet.kubelet"):
        await create(api_client, namespace, make_pod("logged", node, [
            {"name": "c", "image": BUSYBOX, "command": ["sleep", "3600"]}]))
        await pod_where(api_client, namespace, "logged", is_running_and_ready)
        await api_client.resource("pods").delete("logged", namespace, grace_period_seconds=0)
        async def removed() -> bool:
            return "SyncLoop REMOVE" in caplog.text

        await eventually(removed, what="the REMOVE line")
    assert f'"SyncLoop ADD" source="api" pods="{namespace}/logged"' in caplog.text


async def test_env_from_configmap_and_secret(node, api_client, namespace):
    await api_client.resource("configmaps").create(
        {"metadata": {"name": "settings"}, "data": {"color": "blue", "size": "XL"}}, namespace)
    await api_client.resource("secrets").create(
        {"metadata": {"name": "creds"},
         "data": {"password": base64.b64encode(b"s3cret").decode()}}, namespace)
    await create(api_client, namespace, make_pod("envs", node, [shell(
        "app", 'echo "color=$COLOR password=$PASSWORD size=$size"; sleep 3600',
        env=[{"name": "COLOR", "valueFrom": {"configMapKeyRef": {"name": "settings",
                                                                  "key": "color"}}},
             {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds",
                                                                  "key": "password"}}}],
        envFrom=[{"configMapRef": {"name": "settings"}}])]))
    await pod_where(api_client, namespace, "envs", is_running_and_ready)

    async def logged() -> str | None:
        text = await pod_log(api_client, namespace, "envs")
        return text if "color=" in text else None
    assert (await eventually(logged, what="the log line")).strip() == \
        "color=blue password=s3cret size=XL"


async def test_missing_configmap_is_a_create_container_config_error(node, api_client,
                                                                    namespace):
    await create(api_client, namespace, make_pod("noconfig", node, [shell(
        "app", "sleep 3600", env=[{"name": "X", "valueFrom": {"configMapKeyRef": {
            "name": "absent", "key": "k"}}}])]))
    pod = await pod_where(
        api_client, namespace, "noconfig",
        lambda p: container(p).get("state", {}).get("waiting", {}).get("reason")
        == "CreateContainerConfigError" if p.get("status", {}).get("containerStatuses")
        else False)
    assert container(pod)["state"]["waiting"]["message"] == 'configmap "absent" not found'


async def test_configmap_volume_update_reaches_the_file(node, api_client, namespace):
    configmaps = api_client.resource("configmaps")
    await configmaps.create({"metadata": {"name": "site"}, "data": {"index.html": "v1"}},
                            namespace)
    await create(api_client, namespace, make_pod(
        "site", node, [shell("httpd", "httpd -f -p 8080 -h /www",
                             volumeMounts=[{"name": "www", "mountPath": "/www"}])],
        volumes=[{"name": "www", "configMap": {"name": "site"}}]))
    pod = await pod_where(api_client, namespace, "site", is_running_and_ready)
    url = f"http://{pod['status']['podIP']}:8080/index.html"
    assert await eventually(lambda: _contains(url, "v1"), what="v1 served")
    await configmaps.patch("site", {"data": {"index.html": "v2"}}, namespace)
    assert await eventually(lambda: _contains(url, "v2"), timeout=15, what="v2 served")


async def _contains(url: str, text: str) -> bool:
    try:
        return text in await http_get(url)
    except (TimeoutError, aiohttp.ClientError):
        return False


async def test_crashing_container_backs_off_longer_each_time(node, api_client, namespace):
    await create(api_client, namespace, make_pod("crash", node, [shell("app", "exit 3")]))
    seen: dict[int, float] = {}
    reasons: set[str] = set()

    async def restarted_enough() -> Obj | None:
        pod = await api_client.resource("pods").get("crash", namespace)
        statuses = pod.get("status", {}).get("containerStatuses") or []
        if statuses:
            seen.setdefault(statuses[0]["restartCount"], time.monotonic())
            reasons.update(s.get("reason", "") for s in statuses[0]["state"].values())
        return pod if len(seen) >= 5 and "CrashLoopBackOff" in reasons else None
    pod = await eventually(restarted_enough, timeout=60, interval=0.1,
                           what="four restarts and CrashLoopBackOff")
    status = container(pod)
    assert status["lastState"]["terminated"]["exitCode"] == 3
    assert status["lastState"]["terminated"]["reason"] == "Error"
    counts = sorted(seen)[:5]
    gaps = [seen[b] - seen[a] for a, b in zip(counts, counts[1:], strict=False)]
    # 1 s, 2 s, 4 s... between restarts: each wait is longer than the one before
    assert gaps[-1] > gaps[-2] > 0.5, gaps
    messages = [e["message"] for e in await events_for(api_client, namespace, "crash")
                if e["reason"] == "BackOff"]
    assert messages and messages[0].startswith("Back-off restarting failed container app")


async def test_failing_liveness_probe_restarts_the_container(node, api_client, namespace):
    await create(api_client, namespace, make_pod("sick", node, [shell(
        "app", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; sleep 3600",
        livenessProbe={"exec": {"command": ["cat", "/tmp/healthy"]},
                       "periodSeconds": 1, "failureThreshold": 2})]))
    pod = await pod_where(api_client, namespace, "sick",
                          lambda p: (p.get("status", {}).get("containerStatuses") or [{}])[0]
                          .get("restartCount", 0) >= 1, timeout=40,
                          what="a restart after the liveness probe failed")
    assert container(pod)["lastState"]["terminated"]["exitCode"] in (137, 143)
    events = await events_for(api_client, namespace, "sick")
    assert any(e["reason"] == "Unhealthy" and e["message"].startswith("Liveness probe failed")
               for e in events)
    assert any(e["reason"] == "Killing" and "failed liveness probe" in e["message"]
               for e in events)


async def test_readiness_probe_gates_ready(node, api_client, namespace):
    await create(api_client, namespace, make_pod("slow", node, [shell(
        "app", "sleep 3; mkdir /www; echo ok > /www/index.html; httpd -f -p 8080 -h /www",
        readinessProbe={"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1})]))
    running = await pod_where(api_client, namespace, "slow",
                              lambda p: p.get("status", {}).get("phase") == "Running")
    conditions = {c["type"]: c["status"] for c in running["status"]["conditions"]}
    assert conditions["Ready"] == "False" and not container(running)["ready"]
    ready = await pod_where(api_client, namespace, "slow", is_running_and_ready)
    assert container(ready)["ready"]


async def test_init_containers_run_in_order(node, api_client, namespace):
    mount = [{"name": "work", "mountPath": "/work"}]
    await create(api_client, namespace, make_pod(
        "ordered", node, [shell("app", "cat /work/order; sleep 3600", volumeMounts=mount)],
        initContainers=[shell("first", "echo one >> /work/order", volumeMounts=mount),
                        shell("second", "echo two >> /work/order", volumeMounts=mount)],
        volumes=[{"name": "work", "emptyDir": {}}]))
    pod = await pod_where(api_client, namespace, "ordered", is_running_and_ready)
    init = pod["status"]["initContainerStatuses"]
    assert [s["state"]["terminated"]["reason"] for s in init] == ["Completed", "Completed"]
    first, second = (s["state"]["terminated"] for s in init)
    assert first["finishedAt"] <= second["startedAt"]
    assert (await eventually(lambda: pod_log(api_client, namespace, "ordered"))) == \
        "one\ntwo\n"


async def test_pod_that_exits_ends_succeeded_or_failed(node, api_client, namespace):
    await create(api_client, namespace, make_pod("ok", node, [shell("app", "echo done")],
                                                 restartPolicy="Never"))
    await create(api_client, namespace, make_pod("bad", node, [shell("app", "exit 4")],
                                                 restartPolicy="Never"))
    ok = await pod_where(api_client, namespace, "ok",
                         lambda p: p.get("status", {}).get("phase") == "Succeeded")
    assert container(ok)["state"]["terminated"]["reason"] == "Completed"
    bad = await pod_where(api_client, namespace, "bad",
                          lambda p: p.get("status", {}).get("phase") == "Failed")
    assert container(bad)["state"]["terminated"]["exitCode"] == 4


async def test_container_sees_sigterm_on_delete(node, api_client, namespace, fast_tmp):
    out = fast_tmp / f"term-{namespace}"
    out.mkdir()
    await create(api_client, namespace, make_pod(
        "graceful", node,
        [shell("app", 'trap "echo got SIGTERM > /out/term; exit 0" TERM; '
                      "touch /out/trapped; while true; do sleep 0.2; done",
               volumeMounts=[{"name": "out", "mountPath": "/out"}])],
        volumes=[{"name": "out", "hostPath": {"path": str(out)}}],
        terminationGracePeriodSeconds=60))
    await pod_where(api_client, namespace, "graceful", is_running_and_ready)

    async def trapped() -> bool:
        return (out / "trapped").exists()
    # Ready means started, not that the shell has set its trap: a SIGTERM before that is
    # ignored (the shell is PID 1 of its namespace), and the pod would wait out its grace
    # period.
    await eventually(trapped, timeout=30, what="the container's shell to set its trap")
    started = time.monotonic()
    await api_client.resource("pods").delete("graceful", namespace)

    async def gone() -> bool:
        try:
            await api_client.resource("pods").get("graceful", namespace)
        except NotFound:
            return True
        return False
    await eventually(gone, timeout=90, what="the pod to be deleted")
    assert (out / "term").read_text() == "got SIGTERM\n"
    # it exited on SIGTERM: well before the grace period's end would bring SIGKILL
    assert time.monotonic() - started < 45


async def test_missing_image_gives_image_pull_backoff(node, api_client, namespace):
    await create(api_client, namespace, make_pod(
        "noimage", node, [{"name": "app", "image": "localhost/no-such-image:1.0"}]))
    reasons: dict[str, str] = {}

    async def both_seen() -> bool:
        pod = await api_client.resource("pods").get("noimage", namespace)
        for status in pod.get("status", {}).get("containerStatuses") or []:
            waiting = status["state"].get("waiting") or {}
            if waiting.get("reason"):
                reasons[waiting["reason"]] = waiting.get("message", "")
        return {"ErrImagePull", "ImagePullBackOff"} <= set(reasons)
    await eventually(both_seen, timeout=30, what="ErrImagePull then ImagePullBackOff")
    assert "localhost/no-such-image:1.0" in reasons["ErrImagePull"]
    assert reasons["ErrImagePull"].startswith("rpc error: code = ")
    assert reasons["ImagePullBackOff"] == 'Back-off pulling image "localhost/no-such-image:1.0"'


async def test_bad_command_is_reported_while_other_pods_run(node, api_client, namespace):
    await create(api_client, namespace, make_pod(
        "badcmd", node, [{"name": "app", "image": BUSYBOX, "command": ["/no/such/binary"]}]))
    await create(api_client, namespace, make_pod("fine", node, [shell("app", "sleep 3600")]))

    def failed(pod: Obj) -> bool:
        statuses = pod.get("status", {}).get("containerStatuses") or []
        waiting = statuses[0]["state"].get("waiting", {}) if statuses else {}
        terminated = statuses[0]["state"].get("terminated", {}) if statuses else {}
        return (waiting.get("reason") in ("CreateContainerError", "RunContainerError")
                or terminated.get("reason") == "StartError"
                or "lastState" in (statuses[0] if statuses else {})
                and "terminated" in statuses[0]["lastState"])
    pod = await pod_where(api_client, namespace, "badcmd", failed, what="a start error")
    status = container(pod)
    state = status["state"].get("waiting") or status["lastState"].get("terminated") or \
        status["state"].get("terminated")
    assert "/no/such/binary" in state["message"]
    await pod_where(api_client, namespace, "fine", is_running_and_ready)


async def test_restarted_kubelet_adopts_running_containers(node, api_client, namespace):
    await create(api_client, namespace, make_pod("keeper", node, [shell("app", "sleep 3600")]))
    before = container(await pod_where(api_client, namespace, "keeper", is_running_and_ready))
    await node.restart()
    assert node.kubelet is not None
    pleg = node.kubelet.pleg

    async def relisted() -> bool:  # several relists, each waking the adopted pod's sync
        return pleg.relists >= 3

    await eventually(relisted, what="3 relists of the restarted kubelet")
    after = container(await pod_where(api_client, namespace, "keeper", is_running_and_ready))
    assert after["containerID"] == before["containerID"]
    assert after["restartCount"] == 0


async def test_kubectl_logs_follow_streams(node, api_client, namespace, kubeconfig):
    await create(api_client, namespace, make_pod("ticker", node, [shell(
        "app", "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.3; done")]))
    await pod_where(api_client, namespace, "ticker", is_running_and_ready)
    kubectl = Path(os.environ.get("VIRTUAL_ENV", ".venv")) / "bin" / "kubectl"
    if not kubectl.exists():
        kubectl = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "kubectl"
    process = await asyncio.create_subprocess_exec(
        str(kubectl), "--kubeconfig", str(kubeconfig), "-n", namespace, "logs", "-f",
        "ticker", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None
        async with asyncio.timeout(60):
            lines = [await process.stdout.readline() for _ in range(6)]
    finally:
        process.kill()
        await process.wait()
    numbers = [int(line.split()[1]) for line in lines]
    assert numbers == list(range(numbers[0], numbers[0] + 6))


async def sandboxes_of(node: KubeletNode, uid: str) -> list[Any]:
    async with RemoteRuntime(node.endpoint) as runtime:
        listed = await runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
            filter=api_pb2.PodSandboxFilter(label_selector={"io.kubernetes.pod.uid": uid})))
    return list(listed.items)


async def test_restarted_kubelet_removes_sandboxes_of_pods_gone_meanwhile(
        node, api_client, namespace):
    await create(api_client, namespace, make_pod("orphan", node, [shell("app", "sleep 3600")]))
    pod = await pod_where(api_client, namespace, "orphan", is_running_and_ready)
    uid = pod["metadata"]["uid"]
    assert await sandboxes_of(node, uid)
    await node.stop()
    try:  # the pod is force-deleted while no kubelet watches
        await api_client.resource("pods").delete("orphan", namespace, grace_period_seconds=0)
    finally:
        await node.start()

    async def removed() -> bool:
        return not await sandboxes_of(node, uid)
    await eventually(removed, timeout=30, what="the orphan's sandbox to be removed")


async def test_stats_summary_reports_running_pods(node, api_client, namespace):
    # A busy loop takes a whole core while it runs: it ends with the test (its pod is
    # deleted at the end, and its shell leaves the loop on SIGTERM), not with the module.
    await create(api_client, namespace, make_pod("measured", node, [shell(
        "app", "trap 'exit 0' TERM; while true; do :; done")]))
    try:
        await stats_of_a_busy_pod(node, api_client, namespace)
    finally:
        await api_client.resource("pods").delete("measured", namespace)


async def stats_of_a_busy_pod(node: KubeletNode, api_client: Client, namespace: str) -> None:
    await pod_where(api_client, namespace, "measured", is_running_and_ready)

    async def measured() -> Obj | None:
        summary = json.loads(await http_get(
            f"http://127.0.0.1:{node.config.port}/stats/summary"))
        pods = [p for p in summary["pods"] if p["podRef"]["name"] == "measured"]
        if pods and pods[0]["cpu"]["usageCoreNanoSeconds"] > 0:
            return pods[0]
        return None
    stats = await eventually(measured, timeout=20, what="CPU stats of the busy pod")
    assert stats["podRef"]["namespace"] == namespace
    assert stats["memory"]["workingSetBytes"] > 0
    assert stats["containers"][0]["name"] == "app"
    # the same usage as metrics-server scrapes it
    metrics = await http_get(f"http://127.0.0.1:{node.config.port}/metrics/resource")
    cpu = next(line for line in metrics.splitlines() if line.startswith(
        f'container_cpu_usage_seconds_total{{container="app",namespace="{namespace}",'
        'pod="measured"}'))
    assert float(cpu.split()[1]) > 0
    assert "resource_scrape_error 0" in metrics
    assert float(next(line for line in metrics.splitlines()
                      if line.startswith("node_cpu_usage_seconds_total ")).split()[1]) > 0

    # Each reading carries the time the runtime took it, so the rate between two of them
    # is the CPU really used: a busy loop uses at most one core, whenever the answers were
    # written (the time of writing would overstate a rate when the first answer was late)
    async def reading() -> tuple[float, float]:
        [pod] = [p for p in json.loads(await http_get(
            f"http://127.0.0.1:{node.config.port}/stats/summary"))["pods"]
            if p["podRef"]["name"] == "measured"]
        cpu = pod["containers"][0]["cpu"]
        return parse_rfc3339(cpu["time"]), cpu["usageCoreNanoSeconds"] / 1e9
    first = await reading()

    async def a_second_later() -> tuple[float, float] | None:
        latest = await reading()
        return latest if latest[0] - first[0] >= 1.0 else None
    second = await eventually(a_second_later, timeout=20, what="a reading a second later")
    assert 0 < (second[1] - first[1]) / (second[0] - first[0]) <= 1.02


async def test_the_kubelets_own_endpoints_describe_what_it_runs(node, api_client, namespace):
    await create(api_client, namespace, make_pod("described", node, [
        shell("app", "sleep 3600"), shell("side", "sleep 3600")]))
    await pod_where(api_client, namespace, "described", is_running_and_ready)
    base = f"http://127.0.0.1:{node.config.port}"
    # /runningpods/: the runtime's view, container images included
    running = json.loads(await http_get(f"{base}/runningpods/"))
    assert running["kind"] == "PodList"
    pod = next(p for p in running["items"] if p["metadata"]["name"] == "described")
    assert pod["metadata"]["namespace"] == namespace
    assert sorted(c["name"] for c in pod["spec"]["containers"]) == ["app", "side"]
    assert all(c["image"] for c in pod["spec"]["containers"])
    # /metrics: the kubelet's gauges agree with that view, and its process is measured
    families = {f.name: f for f in text_string_to_metric_families(
        await http_get(f"{base}/metrics"))}
    (node_name,) = families["kubelet_node_name"].samples
    assert node_name.labels == {"node": node.config.node_name} and node_name.value == 1
    assert families["kubelet_running_pods"].samples[0].value >= 1
    containers = {s.labels["container_state"]: s.value
                  for s in families["kubelet_running_containers"].samples}
    assert containers["running"] >= 2
    assert families["process_cpu_seconds"].samples[0].value > 0
    # /metrics/cadvisor: per container, labelled as cAdvisor labels it
    cadvisor = {f.name: f for f in text_string_to_metric_families(
        await http_get(f"{base}/metrics/cadvisor"))}
    assert cadvisor["machine_cpu_cores"].samples[0].value == os.cpu_count()
    working = {(s.labels["pod"], s.labels["container"]): s.value
               for s in cadvisor["container_memory_working_set_bytes"].samples}
    assert working[("described", "app")] > 0 and working[("described", "side")] > 0
    # /configz: the configuration it runs with, in KubeletConfiguration's names
    config = json.loads(await http_get(f"{base}/configz"))["kubeletconfig"]
    assert config["port"] == node.config.port
    assert config["clusterDomain"] == "cluster.local"
    assert config["syncFrequency"].endswith("s") and config["evictionHard"]


async def test_the_kubelet_process_stops_on_sigterm_leaving_its_pods_running(
        node, api_client, namespace, kubeconfig, fast_tmp):
    """`python -m minikube_py.kubelet` in place of the module's kubelet (same node, same
    containerd), with a pod whose probe and worker run: SIGTERM stops it, exit code 0,
    without waiting out a timeout (how fast, 2 s the target, is measured by
    benchmarks/component_stop.py), the containers left running as upstream's are, every
    line of its log a klog line."""
    await create(api_client, namespace, make_pod("steady", node, [shell(
        "app", "sleep 3600", readinessProbe={"exec": {"command": ["true"]},
                                             "periodSeconds": 1})]))
    pod = await pod_where(api_client, namespace, "steady", is_running_and_ready)
    await node.stop()
    log = fast_tmp / f"kubelet-process-{os.getpid()}.log"
    process = KubeletProcess(kubeconfig, log, node_name=node.name,
                             runtime_endpoint=node.endpoint, root_dir=node.config.root_dir,
                             pod_cidr=node.config.pod_cidr, extra_args=("-v", "2"))
    try:
        await process.start()
        await eventually(lambda: _logged(log, "SyncLoop ADD"), timeout=30,
                         what="the kubelet process to take the pod over")
        assert process.pid is not None
        started = time.monotonic()
        os.kill(process.pid, signal.SIGTERM)
        while process.running and time.monotonic() - started < 15:
            await asyncio.sleep(0.02)
        assert (process.returncode, time.monotonic() - started < 10) == (0, True)
    finally:
        await process.stop()
        await node.start()
    assert await sandboxes_of(node, pod["metadata"]["uid"])
    lines = log.read_text().splitlines()
    header = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [^ :]+:\d+\] ")
    assert [line for line in lines if not header.match(line)] == []


async def _logged(log: Path, text: str) -> bool:
    return text in log.read_text()


async def test_an_empty_dir_over_its_size_limit_gets_its_pod_evicted(node, api_client,
                                                                     namespace):
    await create(api_client, namespace, make_pod("scratch", node, [shell(
        "app", 'grep " /ram " /proc/mounts; sleep 1; '
               "dd if=/dev/zero of=/cache/blob bs=1M count=3; sleep 3600",
        volumeMounts=[{"name": "cache", "mountPath": "/cache"},
                      {"name": "ram", "mountPath": "/ram"}])],
        restartPolicy="Never",
        volumes=[{"name": "cache", "emptyDir": {"sizeLimit": "1Mi"}},
                 {"name": "ram", "emptyDir": {"medium": "Memory", "sizeLimit": "4Mi"}}]))
    evicted = await pod_where(api_client, namespace, "scratch",
                              lambda p: p.get("status", {}).get("phase") == "Failed",
                              timeout=60, what="the eviction manager to evict the pod")
    assert evicted["status"]["reason"] == "Evicted"
    assert evicted["status"]["message"] == (
        'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". ')
    mount = (await pod_log(api_client, namespace, "scratch")).splitlines()[0].split()
    assert mount[2] == "tmpfs" and "size=4096k" in mount[3].split(",")


def ephemeral_limit(limit: str) -> Obj:
    return {"limits": {"ephemeral-storage": limit}}


async def written_to_writable_layer(node: KubeletNode, uid: str, container_name: str,
                                    at_least: int) -> bool:
    """Whether containerd's stats show the container's writable layer holding at least
    so many bytes (they are refreshed every 10 s)."""
    assert node.kubelet is not None
    answer = await node.kubelet.runtime.list_container_stats(
        api_pb2.ListContainerStatsRequest(filter=api_pb2.ContainerStatsFilter(
            label_selector={"io.kubernetes.pod.uid": uid})))
    return any(s.attributes.metadata.name == container_name
               and s.writable_layer.used_bytes.value >= at_least for s in answer.stats)


async def test_pods_over_their_ephemeral_storage_limits_are_evicted(node, api_client,
                                                                    namespace):
    """Writes to the containers' own file systems (/tmp, no volume) or to their logs: a
    container over its limit (by its writable layer, or by its log), and a pod over its
    containers' limits' sum, are evicted with upstream's messages; a pod within its
    limits, its writes seen by the eviction passes that evicted the others, keeps
    running."""
    within = await create(api_client, namespace, make_pod("within", node, [shell(
        "app", "dd if=/dev/zero of=/tmp/blob bs=1M count=3; sleep 3600",
        resources=ephemeral_limit("10Mi"))], restartPolicy="Never"))
    await eventually(lambda: written_to_writable_layer(
        node, within["metadata"]["uid"], "app", 3 * 1024 * 1024), timeout=60,
        what="containerd to count the 3 MB the within pod wrote")
    writer = "dd if=/dev/zero of=/tmp/blob bs=1M count=20; sleep 3600"
    await create(api_client, namespace, make_pod("container-over", node, [
        shell("app", writer, resources=ephemeral_limit("10Mi")),
        shell("idle", "sleep 3600", resources=ephemeral_limit("100Mi"))],
        restartPolicy="Never"))
    await create(api_client, namespace, make_pod("pod-over", node, [
        shell("app", writer, resources=ephemeral_limit("10Mi"))], restartPolicy="Never"))
    await create(api_client, namespace, make_pod("logs-over", node, [
        shell("talker", "yes $(head -c 999 /dev/zero | tr '\\0' x) | head -c 12000000; "
                        "sleep 3600", resources=ephemeral_limit("10Mi")),
        shell("idle", "sleep 3600", resources=ephemeral_limit("100Mi"))],
        restartPolicy="Never"))
    expected = {
        "container-over": 'Container app exceeded its local ephemeral storage limit "10Mi". ',
        "logs-over":
            'Container talker exceeded its local ephemeral storage limit "10Mi". ',
        "pod-over": "Pod ephemeral local storage usage exceeds the total limit of containers "
                    "10Mi. "}
    for name, message in expected.items():
        evicted = await pod_where(api_client, namespace, name,
                                  lambda p: p.get("status", {}).get("phase") == "Failed",
                                  timeout=90, what=f"the eviction manager to evict {name}")
        assert (evicted["status"]["reason"], evicted["status"]["message"]) == (
            "Evicted", message)

        async def evicted_events(name: str = name) -> list[str]:
            events = await events_for(api_client, namespace, name)
            return [e["message"] for e in events if e["reason"] == "Evicted"]
        assert await eventually(evicted_events, what=f"the Evicted event of {name}") == [
            message]
    still = await api_client.resource("pods").get("within", namespace)
    assert still["status"]["phase"] == "Running" and "reason" not in still["status"]


async def test_the_kubelet_finishes_a_claims_resize_when_it_mounts_it(
        node, api_client, namespace, fast_tmp):
    """The resizer's work done by hand: the PV grown to 2Gi, the claim still at 1Gi and
    NodeResizePending; the kubelet mounting it for a pod finishes it."""
    claim = await api_client.resource("persistentvolumeclaims").create({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "grown"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                 "resources": {"requests": {"storage": "2Gi"}}}}, namespace)
    volume_name = f"grown-{namespace}"
    await api_client.resource("persistentvolumes").create({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume_name},
        "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "2Gi"},
                 "storageClassName": "", "persistentVolumeReclaimPolicy": "Retain",
                 "hostPath": {"path": str(fast_tmp / volume_name), "type": "DirectoryOrCreate"},
                 "claimRef": {"namespace": namespace, "name": "grown",
                              "uid": claim["metadata"]["uid"]}}})
    try:
        claim["spec"]["volumeName"] = volume_name
        claim = await api_client.resource("persistentvolumeclaims").update(claim)
        claim["status"] = {
            "phase": "Bound", "capacity": {"storage": "1Gi"},
            "allocatedResources": {"storage": "2Gi"},
            "allocatedResourceStatuses": {"storage": "NodeResizePending"},
            "conditions": [{"type": "FileSystemResizePending", "status": "True",
                            "lastProbeTime": None,
                            "lastTransitionTime": "2026-11-29T07:00:00Z"}]}
        await api_client.resource("persistentvolumeclaims").update_status(claim)
        await create(api_client, namespace, make_pod(
            "user", node, [shell("app", "sleep 3600", volumeMounts=[
                {"name": "data", "mountPath": "/data"}])],
            volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "grown"}}]))
        await pod_where(api_client, namespace, "user", is_running_and_ready, timeout=60)

        finished = await api_client.resource("persistentvolumeclaims").get("grown", namespace)
        assert finished["status"] == {"phase": "Bound", "capacity": {"storage": "2Gi"},
                                      "allocatedResources": {"storage": "2Gi"}}

        async def resize_event() -> str | None:
            events = await api_client.resource("events").list(namespace)
            return next((e["message"] for e in events["items"]
                         if e["reason"] == "FileSystemResizeSuccessful"
                         and e["involvedObject"]["name"] == "user"), None)
        assert await eventually(resize_event, what="FileSystemResizeSuccessful") == (
            f'MountVolume.NodeExpandVolume succeeded for volume "{volume_name}" {node.name}')
    finally:
        volumes = api_client.resource("persistentvolumes")
        await volumes.patch(volume_name, {"metadata": {"finalizers": None}})
        await volumes.delete(volume_name)
