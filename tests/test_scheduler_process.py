"""The scheduler as a process: beside the seeds' Python lab scheduler, and killed with -9
in the middle of a burst of 500 pods."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.cluster.components import SchedulerProcess
from tests.api_helpers import eventually
from tests.test_scheduler import make_node, make_pod

pytestmark = pytest.mark.slow
LAB_SCHEDULER = Path(__file__).resolve().parents[1] / "labs" / "scheduler" / "watch_scheduler.py"


async def add_nodes(client: Client, prefix: str, count: int, labels: dict[str, str]
                    ) -> list[str]:
    names = []
    for index in range(count):
        node = make_node(f"{prefix}-{index}", cpu="64", memory="256Gi", labels=labels)
        node["status"]["allocatable"]["pods"] = node["status"]["capacity"]["pods"] = "500"
        created = await client.resource("nodes").create(node)
        created["status"] = node["status"]
        await client.resource("nodes").update_status(created)
        names.append(node["metadata"]["name"])
    return names


async def delete_all(client: Client, namespace: str, nodes: list[str]) -> None:
    pods = client.resource("pods")
    await pods.delete_collection(namespace)
    for pod in (await pods.list(namespace))["items"]:
        with contextlib.suppress(NotFound):
            await pods.delete(pod["metadata"]["name"], namespace, grace_period_seconds=0)
    for name in nodes:
        with contextlib.suppress(NotFound):
            await client.resource("nodes").delete(name)


async def test_our_scheduler_and_the_lab_scheduler_share_the_cluster(
    kubeconfig: Path, fast_tmp: Path, api_client: Client, namespace: str,
) -> None:
    """The lab binds pods whose schedulerName is my-scheduler; ours binds the rest."""
    lab_label = uuid.uuid4().hex[:8]
    nodes = await add_nodes(api_client, f"lab-{lab_label}", 3, {"lab": lab_label})
    lab = subprocess.Popen(
        [sys.executable, str(LAB_SCHEDULER), "--node-selector", f"lab={lab_label}",
         "--max-pods", "4", "--timeout", "60"],
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        async with SchedulerProcess(kubeconfig, fast_tmp / f"sched-{namespace}.log"):
            pods = api_client.resource("pods")
            for index in range(4):
                await pods.create(make_pod(f"lab-{index}", scheduler_name="my-scheduler",
                                           nodeSelector={"lab": lab_label}), namespace)
                await pods.create(make_pod(f"ours-{index}", nodeSelector={"lab": lab_label}),
                                  namespace)

            async def all_bound() -> bool:
                listed = (await pods.list(namespace))["items"]
                return len(listed) == 8 and all(p["spec"].get("nodeName") for p in listed)

            await eventually(all_bound, timeout=60, what="all eight pods to be bound")
            output, _ = await asyncio.to_thread(lab.communicate, timeout=60)
            listed = {p["metadata"]["name"]: p for p in (await pods.list(namespace))["items"]}

            async def scheduled_by() -> dict[str, set[str]]:
                """Who wrote each pod's Scheduled event (recorders write them after the bind)."""
                events = (await api_client.resource("events").list(namespace))["items"]
                writers: dict[str, set[str]] = {}
                for event in events:
                    if event["reason"] == "Scheduled":
                        source = (event.get("source") or {}).get("component") or event.get(
                            "reportingComponent")
                        writers.setdefault(source, set()).add(event["involvedObject"]["name"])
                return writers

            async def eight_events() -> bool:
                return sum(map(len, (await scheduled_by()).values())) >= 8

            await eventually(eight_events, timeout=60, what="a Scheduled event for each pod")
            # each scheduler writes the Scheduled event of the pods it bound, as its own
            assert await scheduled_by() == {
                "default-scheduler": {f"ours-{i}" for i in range(4)},
                "my-scheduler": {f"lab-{i}" for i in range(4)}}
            for index in range(4):
                name = f"lab-{index}"
                assert f"Bound {namespace}/{name} -> {listed[name]['spec']['nodeName']}" in (
                    output)
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait()
        await delete_all(api_client, namespace, nodes)


async def test_kill_9_mid_burst_then_restart_binds_every_pod_exactly_once(
    kubeconfig: Path, fast_tmp: Path, api_client: Client, namespace: str,
) -> None:
    label = uuid.uuid4().hex[:8]
    nodes = await add_nodes(api_client, f"burst-{label}", 5, {"burst": label})
    pods = api_client.resource("pods")
    node_changes: dict[str, list[str]] = {}
    watching = asyncio.Event()

    async def watch_bindings() -> None:
        listed = await pods.list(namespace)
        watching.set()
        async for _type, pod in pods.watch(
                namespace, resource_version=listed["metadata"]["resourceVersion"]):
            name, node = pod["metadata"]["name"], pod["spec"].get("nodeName", "")
            seen = node_changes.setdefault(name, [])
            if node and (not seen or seen[-1] != node):
                seen.append(node)

    watcher = asyncio.create_task(watch_bindings())
    await watching.wait()
    scheduler = SchedulerProcess(kubeconfig, fast_tmp / f"sched-burst-{namespace}.log")
    try:
        await scheduler.start()
        total = 500

        async def create(index: int) -> None:
            await pods.create(make_pod(f"p-{index:03d}", nodeSelector={"burst": label}),
                              namespace)

        async def create_all() -> None:
            for start in range(0, total, 50):
                await asyncio.gather(*(create(i) for i in range(start, start + 50)))

        async def some_bound() -> bool:
            return sum(bool(v) for v in node_changes.values()) >= 50

        # the creates go on while the scheduler is killed: the kill always comes mid-burst,
        # however fast the scheduler binds what exists so far
        creating = asyncio.create_task(create_all())
        await eventually(some_bound, timeout=60, what="the burst to be under way")
        await scheduler.kill()
        bound_at_kill = sum(bool(v) for v in node_changes.values())
        await scheduler.start()
        await creating

        async def all_bound() -> bool:
            listed = (await pods.list(namespace))["items"]
            return len(listed) == total and all(p["spec"].get("nodeName") for p in listed)

        await eventually(all_bound, timeout=120, interval=0.5, what="all 500 pods bound")

        async def watcher_saw_all_bound() -> bool:  # the events the assertions read
            return len(node_changes) == total and all(node_changes.values())

        await eventually(watcher_saw_all_bound, timeout=60, what="the watch's 500 bindings")
    finally:
        await scheduler.stop()
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        await delete_all(api_client, namespace, nodes)
    assert bound_at_kill < total, "the kill came before the burst was done"
    assert len(node_changes) == total
    moved = {name: seen for name, seen in node_changes.items() if len(seen) != 1}
    assert not moved, f"pods bound more than once: {moved}"


async def test_at_verbosity_2_the_log_shows_each_decision_as_klog_writes_it(
    kubeconfig: Path, fast_tmp: Path, api_client: Client, namespace: str,
) -> None:
    label = uuid.uuid4().hex[:8]
    nodes = await add_nodes(api_client, f"log-{label}", 2, {"log": label})
    log_path = fast_tmp / f"sched-log-{namespace}.log"
    pods = api_client.resource("pods")
    try:
        async with SchedulerProcess(kubeconfig, log_path, extra_args=("-v", "3")):
            await pods.create(make_pod("fits", nodeSelector={"log": label}), namespace)
            await pods.create(make_pod("nowhere", nodeSelector={"log": "no-such-node"}),
                              namespace)

            async def logged(text: str) -> bool:
                return text in log_path.read_text()

            await eventually(lambda: logged(
                f'"Successfully bound pod to node" pod="{namespace}/fits"'), timeout=30,
                what="the bound pod in the log")
            await eventually(lambda: logged(
                f'"Unable to schedule pod; no fit; waiting" pod="{namespace}/nowhere"'),
                timeout=30, what="the unschedulable pod in the log")
        text = log_path.read_text()
        line = next(line for line in text.splitlines()
                    if f'pod="{namespace}/fits"' in line and "Successfully bound" in line)
        assert re.match(r"^I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ scheduler\.py:\d+\] ", line), line
        assert 'evaluatedNodes=' in line and "feasibleNodes=" in line
        assert f'"Attempting to schedule pod" pod="{namespace}/fits"' in text
    finally:
        await delete_all(api_client, namespace, nodes)
