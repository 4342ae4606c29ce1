"""Pod workers (one sync at a time per pod, wake-ups folded) and the PLEG's relist diff."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.kubelet import needs_sync
from minikube_py.kubelet.pleg import GenericPLEG
from minikube_py.kubelet.pod_workers import DONE, PodWorkers
from minikube_py.kubelet.podstate import (
    MANAGED_LABEL,
    POD_UID_LABEL,
    PodRuntimeStatus,
    runtime_view,
    sandbox_record,
)
from minikube_py.kubelet.simulated import SimulatedRuntime


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait until `condition()` holds: the tests wait for what they expect instead of
    sleeping a guessed time and hoping the workers got there."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


async def until_caught_up(workers: PodWorkers, uid: str, calls: list[str]) -> None:
    """Until the pod's worker has handled every wake-up so far: it is woken once more by
    one that is already settled, and gets to it. A wake-up still pending would be
    folded with it into one more sync instead (which the caller's `calls` then show),
    so no sleep has to guess how long a sync that must not happen would take to come."""
    looked_at = asyncio.Event()
    syncs = len(calls)

    def settled() -> bool:
        looked_at.set()
        return True

    workers.update_pod(uid, unless=settled)
    await until(lambda: looked_at.is_set() or len(calls) > syncs)


async def test_wakeups_during_a_sync_fold_into_one_more_sync():
    calls: list[str] = []
    release = asyncio.Event()

    async def sync(uid: str) -> float | None:
        calls.append(uid)
        if len(calls) == 1:
            await release.wait()
        return None
    workers = PodWorkers(sync)
    workers.update_pod("a")
    await until(lambda: len(calls) == 1)
    for _ in range(5):
        workers.update_pod("a")  # arrives while the first sync runs
    release.set()
    await until(lambda: len(calls) >= 2)
    await until_caught_up(workers, "a", calls)
    assert calls == ["a", "a"]
    await workers.stop()



async def test_a_runtime_change_the_running_sync_already_saw_costs_no_second_sync():
    """The PLEG relists while a sync starts containers: it reports the change the sync is
    making itself. Checked when the worker gets to it, the wake-up is dropped."""
    calls: list[str] = []
    release = asyncio.Event()
    seen = {"synced": "old", "runtime": "old"}

    async def sync(uid: str) -> float | None:
        calls.append(uid)
        if len(calls) == 1:
            await release.wait()
            seen["synced"] = seen["runtime"]  # what this sync saw at its end
        return None
    workers = PodWorkers(sync)
    workers.update_pod("a")
    await until(lambda: len(calls) == 1)
    seen["runtime"] = "started"
    workers.update_pod("a", unless=lambda: seen["synced"] == seen["runtime"])
    release.set()
    await until(lambda: seen["synced"] == "started")
    await until_caught_up(workers, "a", calls)
    assert calls == ["a"]
    seen["runtime"] = "exited"  # a change no sync has seen yet
    workers.update_pod("a", unless=lambda: seen["synced"] == seen["runtime"])
    await until(lambda: len(calls) >= 2)
    assert calls == ["a", "a"]
    await workers.stop()


async def test_a_conditional_wakeup_never_cancels_an_unconditional_one_or_a_retry():
    calls: list[float] = []

    async def sync(uid: str) -> float | None:
        calls.append(asyncio.get_running_loop().time())
        return 0.1 if len(calls) == 1 else None
    workers = PodWorkers(sync)
    workers.update_pod("a", unless=lambda: True)  # a new worker always syncs once
    await until(lambda: len(calls) == 1)
    workers.update_pod("a", unless=lambda: True)  # dropped, but the retry timer stays
    await until(lambda: len(calls) >= 2)
    assert calls[1] - calls[0] >= 0.09  # the retry came after its delay
    workers.update_pod("a", unless=lambda: True)
    workers.update_pod("a")  # an API update in the same fold: sync
    await until(lambda: len(calls) >= 3)
    assert len(calls) == 3
    await workers.stop()

async def test_syncs_of_different_pods_run_concurrently():
    running: set[str] = set()
    overlap = asyncio.Event()

    async def sync(uid: str) -> float | None:
        running.add(uid)
        if len(running) == 2:
            overlap.set()
        async with asyncio.timeout(1):
            await overlap.wait()
        return None
    workers = PodWorkers(sync)
    workers.update_pod("a")
    workers.update_pod("b")
    async with asyncio.timeout(1):
        await overlap.wait()
    await workers.stop()


async def test_sync_asking_to_retry_runs_again_and_done_ends_the_worker():
    calls: list[float] = []

    async def sync(uid: str) -> float | None:
        calls.append(asyncio.get_running_loop().time())
        return 0.05 if len(calls) < 3 else DONE
    workers = PodWorkers(sync)
    workers.update_pod("a")
    await until(lambda: len(calls) >= 3 and workers.known() == set())
    assert len(calls) == 3 and calls[1] - calls[0] >= 0.04


async def test_a_failing_sync_is_retried():
    calls: list[int] = []

    async def sync(uid: str) -> float | None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("runtime unavailable")
        return DONE
    workers = PodWorkers(sync)
    workers.update_pod("a")
    await until(lambda: len(calls) >= 2)
    assert len(calls) == 2


async def _sandbox(runtime: SimulatedRuntime, uid: str) -> str:
    labels = {POD_UID_LABEL: uid, MANAGED_LABEL: "true"}
    config = api_pb2.PodSandboxConfig(
        metadata=api_pb2.PodSandboxMetadata(name=uid, uid=uid, namespace="ns"), labels=labels)
    answer = await runtime.run_pod_sandbox(api_pb2.RunPodSandboxRequest(config=config))
    return answer.pod_sandbox_id


async def test_pleg_wakes_only_pods_whose_containers_changed():
    runtime = SimulatedRuntime()
    woken: list[str] = []
    pleg = GenericPLEG(runtime, woken.append)
    await _sandbox(runtime, "a")
    b = await _sandbox(runtime, "b")
    await pleg.relist()
    assert sorted(woken) == ["a", "b"]  # the first relist sees everything as new
    woken.clear()
    await pleg.relist()
    assert woken == []  # nothing changed, nobody woken
    await runtime.stop_pod_sandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=b))
    await pleg.relist()
    assert woken == ["b"]
    woken.clear()
    await runtime.remove_pod_sandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=b))
    await pleg.relist()
    assert woken == ["b"]  # gone is a change too


def test_status_only_updates_do_not_wake_the_worker():
    pod = {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": []},
           "status": {"phase": "Pending", "conditions": [
               {"type": "PodScheduled", "status": "True"}]}}
    written = {**pod, "status": {"phase": "Running", "conditions": [
        {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}}
    assert not needs_sync(pod, written)  # the kubelet's own status write coming back
    relabelled = {**pod, "metadata": {"labels": {"a": "2"}}}
    assert needs_sync(pod, relabelled)
    deleting = {**pod, "metadata": {**pod["metadata"],
                                    "deletionTimestamp": "2026-11-22T00:00:00Z"}}
    assert needs_sync(pod, deleting)
    gated = {**pod, "status": {**pod["status"], "conditions": [
        *pod["status"]["conditions"], {"type": "example.com/gate", "status": "True"}]}}
    assert needs_sync(pod, gated)  # a readiness gate someone else set


async def test_pleg_view_matches_what_a_sync_saw():
    runtime = SimulatedRuntime()
    pleg = GenericPLEG(runtime, lambda uid: None)
    await _sandbox(runtime, "a")
    await pleg.relist()
    listed = await runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest())
    status = PodRuntimeStatus(uid="a", sandboxes=[sandbox_record(s) for s in listed.items])
    assert pleg.view("a") == runtime_view(status)
