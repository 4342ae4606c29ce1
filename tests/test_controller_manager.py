"""The controller-manager as a process: flags, /healthz and /metrics, leader election
between two copies, and a kill -9 in the middle of a rollout; how a controller's failed
sync is logged and retried."""

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

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.logs import level_of
from minikube_py.client.rest import Client
from minikube_py.cluster.components import ControllerManagerProcess
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.manager import select_controllers
from tests.api_helpers import eventually
from tests.fake_kubelet import FakeKubelet


class Alpha(Controller):
    name = "alpha"


class Beta(Controller):
    name = "beta"


class StaleWriter(Controller):
    """Writes a ConfigMap back with the resourceVersion it first saw, so every write
    after its first is a 409 Conflict from the API server."""

    name = "stale-writer"
    namespace = ""

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.config_maps = self.informer("configmaps")
        self.watch_own_kind(self.config_maps)
        self.first_version: dict[str, str] = {}
        self.conflicts = 0

    async def sync(self, key: str) -> None:
        config_map = self.config_maps.store.get(key)
        if config_map is None or config_map["metadata"]["namespace"] != self.namespace:
            return
        version = self.first_version.setdefault(key, config_map["metadata"]["resourceVersion"])
        stale = {**config_map, "metadata": {**config_map["metadata"], "resourceVersion": version},
                 "data": {"synced": "yes"}}
        try:
            await self.client.resource("configmaps").update(stale)
        except Exception:
            self.conflicts += 1
            raise


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


async def test_a_conflict_is_retried_and_logged_at_v2_in_one_line_without_a_traceback(
        run_controllers: Any, api_client: Client, namespace: str,
        caplog: pytest.LogCaptureFixture) -> None:
    """Upstream's controllers requeue a 409 as an ordinary event (another writer came
    first), logged at -v 2: no error, no traceback."""
    StaleWriter.namespace = namespace
    caplog.set_level(level_of(2), logger="minikube_py.controllers.base")
    manager = await run_controllers(StaleWriter)
    writer = manager.controllers[0]
    assert isinstance(writer, StaleWriter)
    config_maps = api_client.resource("configmaps")
    # the writer's first write succeeds; from then on the version it holds is stale
    await config_maps.create({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "contested"}}, namespace)

    async def retried() -> bool:
        return writer.conflicts >= 3

    await eventually(retried, timeout=20, what="the Conflict to be retried")
    lines = [record for record in caplog.records if "stale-writer" in record.getMessage()]
    assert len(lines) >= 3 and all(record.levelno == level_of(2) and not record.exc_info
                                   for record in lines), [(r.levelname, r.getMessage())
                                                          for r in lines]
    assert "the object has been modified" in lines[0].getMessage()


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

        async def sync_counted() -> str | None:
            """The metrics once the sync that made the pods has ended: it is timed and
            counted after its creates return, so the pods may be seen a moment before."""
            exposed = await asyncio.to_thread(metrics, manager.url)
            return exposed if all(line in exposed for line in (
                'controller_syncs_total{controller="replicaset",result="success"}',
                'workqueue_work_duration_seconds_count{name="replicaset"}')) else None
        exposed = await eventually(sync_counted, what="a successful replicaset sync counted")
        assert 'workqueue_adds_total{name="replicaset"}' in exposed
        assert 'workqueue_depth{name="replicaset"}' in exposed


async def _is(value: Any, expected: Any) -> bool:
    return (await value) == expected


async def lease_holder(client: Client) -> str:
    """Who holds the Lease; "" before the first copy has made it."""
    try:
        lease = await client.resource("leases").get("kube-controller-manager", "kube-system")
    except NotFound:
        return ""
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
    """The rollout ends right, and at no revision of the whole run did the ReplicaSets
    want more than replicas + maxSurge pods, nor a ReplicaSet hold more pods than it
    wanted when it created one (a controller that lost its expectations in the kill would
    create duplicates).

    This is upstream's guarantee: the deployment controller bounds the sum of its
    ReplicaSets' spec.replicas. The pods alone may briefly exceed it, since the delete of
    an old pod (by the old ReplicaSet's sync) races the create of a new one (by the new
    ReplicaSet's). Pod and ReplicaSet events are merged in etcd's revision order, which
    is the order they happened in."""
    replicas, max_surge = 6, 1
    deployments = api_client.resource("deployments", "apps")
    history: list[tuple[int, str, str, Obj]] = []  # (revision, kind, event type, object)
    watching = asyncio.Event()

    async def record(kind: str, group: str) -> None:
        resource = api_client.resource(kind, group)
        listed = await resource.list(namespace)
        assert listed["items"] == [], "the test namespace starts empty"
        watching.set()
        async for event_type, obj in resource.watch(
                namespace, resource_version=listed["metadata"]["resourceVersion"]):
            history.append((int(obj["metadata"]["resourceVersion"]), kind, event_type, obj))
        raise AssertionError(f"the {kind} watch ended while the test was still checking")

    log = fast_tmp / f"cm-{namespace}.log"
    extra = ("--controllers=replicaset,deployment",)
    images_at_end: list[str] = []
    async with FakeKubelet(api_client, namespace, delay=0.3):
        recorders = [asyncio.create_task(record("pods", "")),
                     asyncio.create_task(record("replicasets", "apps"))]
        await watching.wait()
        manager = ControllerManagerProcess(kubeconfig, log, extra_args=extra)
        await manager.start()
        pods = api_client.resource("pods")
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

            async def recorded_everything() -> bool:
                """Each recorder's replay ends where a list of the same kind stands: it
                holds every event (a lagging one would replay a prefix)."""
                for kind, group in (("pods", ""), ("replicasets", "apps")):
                    listed = (await api_client.resource(kind, group).list(namespace))["items"]
                    if _replayed_versions(history, kind) != {
                            item["metadata"]["name"]: item["metadata"]["resourceVersion"]
                            for item in listed}:
                        return False
                return True

            await eventually(recorded_everything, what="every event recorded")
        finally:
            await manager.stop()
            for recorder in recorders:
                recorder.cancel()
            for recorder in recorders:
                with contextlib.suppress(asyncio.CancelledError):
                    await recorder  # re-raises what the recorder died of, if it did
    assert images_at_end == ["v2"] * replicas
    assert _rollout_violations(history, replicas + max_surge) == []


def _replayed_versions(history: list[tuple[int, str, str, Obj]], kind: str
                       ) -> dict[str, str]:
    """The objects of `kind` the recorded events leave, each at its last resourceVersion."""
    state: dict[str, str] = {}
    for _revision, recorded, event_type, obj in sorted(history, key=lambda event: event[0]):
        if recorded != kind:
            continue
        if event_type == "DELETED":
            state.pop(obj["metadata"]["name"], None)
        else:
            state[obj["metadata"]["name"]] = obj["metadata"]["resourceVersion"]
    return state


def _rollout_violations(history: list[tuple[int, str, str, Obj]], most: int) -> list[str]:
    """Replay pod and ReplicaSet events in revision order; what broke the bounds."""
    wanted: dict[str, int] = {}  # ReplicaSet -> spec.replicas
    live: dict[str, set[str]] = {}  # ReplicaSet -> its pods not being deleted
    violations = []
    for revision, kind, event_type, obj in sorted(history, key=lambda event: event[0]):
        name = obj["metadata"]["name"]
        if kind == "replicasets":
            if event_type == "DELETED":
                wanted.pop(name, None)
            else:
                wanted[name] = obj["spec"]["replicas"]
            if sum(wanted.values()) > most:
                violations.append(f"revision {revision}: the ReplicaSets want {wanted}")
            continue
        owner = obj["metadata"]["ownerReferences"][0]["name"]
        pods = live.setdefault(owner, set())
        if event_type == "DELETED" or obj["metadata"].get("deletionTimestamp"):
            pods.discard(name)
        elif event_type == "ADDED":
            pods.add(name)
            if len(pods) > wanted.get(owner, 0):
                violations.append(f"revision {revision}: {owner} created {name}, its pod "
                                  f"{len(pods)} of {wanted.get(owner, 0)} wanted")
    return violations


def test_rollout_replay_finds_too_many_wanted_and_a_create_beyond_the_spec() -> None:
    def rs(name: str, wanted: int) -> Obj:
        return {"metadata": {"name": name}, "spec": {"replicas": wanted}}

    def pod(name: str, owner: str, deleting: bool = False) -> Obj:
        meta: Obj = {"name": name, "ownerReferences": [{"name": owner}]}
        if deleting:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return {"metadata": meta}

    fine = [(1, "replicasets", "ADDED", rs("old", 2)), (2, "pods", "ADDED", pod("a", "old")),
            (3, "pods", "ADDED", pod("b", "old")), (4, "replicasets", "ADDED", rs("new", 1)),
            (5, "replicasets", "MODIFIED", rs("old", 1)),
            (7, "pods", "MODIFIED", pod("a", "old", deleting=True)),
            (6, "pods", "ADDED", pod("c", "new"))]  # out of order: the replay sorts
    assert _rollout_violations(fine, 3) == []
    assert _rollout_violations(fine, 2) == ["revision 4: the ReplicaSets want "
                                            "{'old': 2, 'new': 1}"]
    duplicate = [*fine, (8, "pods", "ADDED", pod("d", "new"))]
    assert _rollout_violations(duplicate, 3) == [
        "revision 8: new created d, its pod 2 of 1 wanted"]


def test_every_registered_controller_implements_sync() -> None:
    from minikube_py.controllers.registry import ALL_CONTROLLERS
    assert [c.name for c in ALL_CONTROLLERS if c.__abstractmethods__] == []
