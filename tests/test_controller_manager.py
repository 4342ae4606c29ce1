"""The controller-manager as a process: flags, /healthz and /metrics, leader election
between two copies, and a kill -9 in the middle of a rollout."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from minikube_py.client.rest import Client
from minikube_py.cluster.components import ControllerManagerProcess
from minikube_py.controllers.base import Controller
from minikube_py.controllers.manager import select_controllers
from tests.api_helpers import eventually
from tests.fake_kubelet import FakeKubelet

Obj = dict[str, Any]


class Alpha(Controller):
    name = "alpha"


class Beta(Controller):
    name = "beta"


def test_controllers_flag_enables_and_disables_by_name() -> None:
    known = (Alpha, Beta)
    assert select_controllers(["*"], known) == [Alpha, Beta]
    assert select_controllers(["*", "-beta"], known) == [Alpha]
    assert select_controllers(["beta"], known) == [Beta]
    with pytest.raises(ValueError, match="unknown controller 'gamma'"):
        select_controllers(["*", "-gamma"], known)


def test_an_unknown_controller_is_one_clear_line(kubeconfig: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "minikube_py.controllers", f"--kubeconfig={kubeconfig}",
         "--controllers=*,nope"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        result.stderr.strip()], "exactly one line"
    assert "unknown controller 'nope'" in result.stderr


def test_a_missing_kubeconfig_is_one_clear_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "minikube_py.controllers",
         f"--kubeconfig={tmp_path / 'none'}"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert "no kubeconfig found" in result.stderr and "minikube-py up" in result.stderr


def replica_set(name: str, replicas: int) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def deployment(name: str, image: str, replicas: int) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


async def pod_count(client: Client, namespace: str) -> int:
    return len((await client.resource("pods").list(namespace))["items"])


def metrics(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as answer:
        return answer.read().decode()


@pytest.mark.slow
async def test_healthz_and_metrics_show_the_work_done(
    kubeconfig: Path, fast_tmp: Path, api_client: Client, namespace: str,
) -> None:
    async with ControllerManagerProcess(
            kubeconfig, fast_tmp / f"cm-{namespace}.log",
            extra_args=("--controllers=replicaset",)) as manager:
        with urllib.request.urlopen(f"{manager.url}/healthz", timeout=5) as answer:
            assert answer.read() == b"ok"
        await api_client.resource("replicasets", "apps").create(
            replica_set("web", 2), namespace)
        await eventually(lambda: _is(pod_count(api_client, namespace), 2), what="2 pods")
        exposed = metrics(manager.url)
        assert 'workqueue_adds_total{name="replicaset"}' in exposed
        assert 'workqueue_depth{name="replicaset"}' in exposed
        assert 'workqueue_work_duration_seconds_count{name="replicaset"}' in exposed
        assert 'controller_syncs_total{controller="replicaset",result="success"}' in exposed


async def _is(value: Any, expected: Any) -> bool:
    return (await value) == expected


async def lease_holder(client: Client) -> str:
    lease = await client.resource("leases").get("kube-controller-manager", "kube-system")
    return lease["spec"].get("holderIdentity") or ""


@pytest.mark.slow
async def test_only_the_leader_acts_and_the_other_takes_over_when_it_is_killed(
    kubeconfig: Path, fast_tmp: Path, api_client: Client, namespace: str,
) -> None:
    election = ("--controllers=replicaset", "--leader-elect",
                "--leader-elect-lease-duration=3", "--leader-elect-renew-deadline=2",
                "--leader-elect-retry-period=0.5")
    first = ControllerManagerProcess(kubeconfig, fast_tmp / f"cm-a-{namespace}.log",
                                     extra_args=(*election, "--identity=first"))
    second = ControllerManagerProcess(kubeconfig, fast_tmp / f"cm-b-{namespace}.log",
                                      extra_args=(*election, "--identity=second"))
    async with first:
        await eventually(lambda: _is(lease_holder(api_client), "first"), timeout=15,
                         what="the first copy to lead")
        async with second:
            replica_sets = api_client.resource("replicasets", "apps")
            await replica_sets.create(replica_set("web", 2), namespace)
            await eventually(lambda: _is(pod_count(api_client, namespace), 2), what="2 pods")
            assert await lease_holder(api_client) == "first"
            assert 'workqueue_adds_total{name="replicaset"}' not in metrics(second.url), (
                "the standby copy must not run controllers")
            await first.kill()
            killed_at = time.monotonic()
            await eventually(lambda: _is(lease_holder(api_client), "second"), timeout=15,
                             what="the second copy to take over")
            takeover = time.monotonic() - killed_at
            assert takeover <= 3 + 2, f"took over after {takeover:.1f}s (lease 3s)"
            await replica_sets.patch("web", {"spec": {"replicas": 4}}, namespace)
            await eventually(lambda: _is(pod_count(api_client, namespace), 4), timeout=15,
                             what="the new leader to scale up")
    holder = await lease_holder(api_client)
    assert holder == "", "a copy stopped with SIGTERM hands the lease over"


@pytest.mark.slow
async def test_kill_9_mid_rollout_then_restart_completes_it_without_extra_pods(
    kubeconfig: Path, fast_tmp: Path, api_client: Client, namespace: str,
) -> None:
    replicas, max_surge = 6, 1
    deployments = api_client.resource("deployments", "apps")
    pods = api_client.resource("pods")
    most_pods = 0
    images_at_end: list[str] = []
    watching = asyncio.Event()

    async def watch_pods() -> None:
        nonlocal most_pods
        alive: dict[str, Obj] = {}
        listed = await pods.list(namespace)
        watching.set()
        async for event_type, pod in pods.watch(
                namespace, resource_version=listed["metadata"]["resourceVersion"]):
            name = pod["metadata"]["name"]
            if event_type == "DELETED" or pod["metadata"].get("deletionTimestamp"):
                alive.pop(name, None)
            elif event_type in ("ADDED", "MODIFIED"):
                alive[name] = pod
            most_pods = max(most_pods, len(alive))
        raise AssertionError("the pod watch ended while the test was still checking")

    log = fast_tmp / f"cm-{namespace}.log"
    extra = ("--controllers=replicaset,deployment",)
    async with FakeKubelet(api_client, namespace, delay=0.3):
        watcher = asyncio.create_task(watch_pods())
        await watching.wait()
        manager = ControllerManagerProcess(kubeconfig, log, extra_args=extra)
        await manager.start()
        try:
            await deployments.create(deployment("web", "v1", replicas), namespace)

            async def rolled_out(image: str) -> bool:
                d = await deployments.get("web", namespace)
                status = d.get("status", {})
                listed = (await pods.list(namespace))["items"]
                return (status.get("observedGeneration") == d["metadata"]["generation"]
                        and status.get("updatedReplicas") == replicas
                        and status.get("availableReplicas") == replicas
                        and status.get("replicas") == replicas
                        and len(listed) == replicas
                        and all(p["spec"]["containers"][0]["image"] == image for p in listed))

            await eventually(lambda: rolled_out("v1"), timeout=30, what="v1 rolled out")
            most_pods = 0
            await deployments.patch("web", {"spec": {"template": {"spec": {"containers": [
                {"name": "c", "image": "v2"}]}}}}, namespace, patch_type="strategic")

            async def some_v2() -> bool:
                listed = (await pods.list(namespace))["items"]
                return sum(p["spec"]["containers"][0]["image"] == "v2" for p in listed) >= 2

            await eventually(some_v2, timeout=30, what="the rollout to be under way")
            await manager.kill()
            await asyncio.sleep(1.0)
            await manager.start()
            await eventually(lambda: rolled_out("v2"), timeout=60, what="v2 rolled out")
            images_at_end = [p["spec"]["containers"][0]["image"]
                             for p in (await pods.list(namespace))["items"]]
        finally:
            await manager.stop()
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher  # re-raises what the watcher died of, if it did
    assert images_at_end == ["v2"] * replicas
    assert most_pods <= replicas + max_surge, (
        f"{most_pods} pods at once; at most {replicas + max_surge} allowed")


def test_every_registered_controller_implements_sync() -> None:
    from minikube_py.controllers.registry import ALL_CONTROLLERS
    assert [c.name for c in ALL_CONTROLLERS if c.__abstractmethods__] == []
