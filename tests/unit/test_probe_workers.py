"""The prober manager's promises: thresholds, delays, startup gating, restarts, events.

Time is a fake clock moved by the test; exec probes go to a scripted exec_sync whose
answer depends on the probe kind named in the command (["check", "live"]).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from minikube_py.api import Obj
from minikube_py.kubelet.probe_workers import Clock, ProbeManager, RunningContainer

UID = "uid-1"


async def settle() -> None:
    """Let every task that can run, run (the fake exec answers at once)."""
    for _ in range(30):
        await asyncio.sleep(0)


class FakeClock(Clock):
    """Stands still; advance() moves it and wakes the sleepers that are due, in order."""

    def __init__(self) -> None:
        self.moment = 1_000.0
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self.moment

    async def sleep(self, seconds: float) -> None:
        entry = (self.moment + seconds, asyncio.get_running_loop().create_future())
        self._sleepers.append(entry)
        try:
            await entry[1]
        finally:
            self._sleepers.remove(entry)

    async def advance(self, seconds: float) -> None:
        target = self.moment + seconds
        await settle()
        while due := [at for at, future in self._sleepers if at <= target and not future.done()]:
            self.moment = max(self.moment, min(due))
            for at, future in self._sleepers:
                if at <= self.moment and not future.done():
                    future.set_result(None)
            await settle()
        self.moment = target
        await settle()


class Node:
    """A ProbeManager with a fake clock and a scripted runtime, and what it reported."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.exit_codes: dict[str, int] = {}  # probe kind ("live", "ready", "start") -> code
        self.exec_error: Exception | None = None
        self.execs: list[tuple[str, str]] = []  # (container id, kind)
        self.changes: list[str] = []
        self.events: list[tuple[str, str, str]] = []
        self.manager = ProbeManager(
            self.exec_sync, on_change=self.changes.append,
            record_event=lambda pod, kind, reason, message: self.events.append(
                (kind, reason, message)),
            clock=self.clock)

    async def exec_sync(self, container_id: str, command: list[str],
                        timeout: float) -> tuple[int, str]:
        self.execs.append((container_id, command[1]))
        if self.exec_error is not None:
            raise self.exec_error
        code = self.exit_codes.get(command[1], 0)
        return code, f"{command[1]} exited {code}"

    def probed(self, kind: str) -> int:
        return sum(1 for _, k in self.execs if k == kind)

    def run(self, pod: Obj, container_id: str = "c1", *, age: float = 0.0) -> None:
        """Tell the manager the app container runs as `container_id`, started age s ago."""
        self.manager.update_pod(pod, {"app": RunningContainer(container_id,
                                                              self.clock.now() - age)})


@pytest.fixture
async def node() -> AsyncIterator[Node]:
    node = Node()
    try:
        yield node
    finally:
        await node.manager.stop()


def exec_probe(kind: str, **timing: Any) -> Obj:
    return {"exec": {"command": ["check", kind]}, "periodSeconds": 10, **timing}


def make_pod(**probes: Obj) -> Obj:
    return {"metadata": {"name": "web", "namespace": "default", "uid": UID},
            "spec": {"containers": [{"name": "app", **probes}]},
            "status": {"phase": "Running", "podIP": "127.0.0.1"}}


# -- thresholds ---------------------------------------------------------------------------

async def test_liveness_fails_only_after_failure_threshold_failures_in_a_row(node: Node) -> None:
    node.exit_codes["live"] = 1
    node.run(make_pod(livenessProbe=exec_probe("live", failureThreshold=3)))
    await node.clock.advance(10)
    assert node.probed("live") == 2
    assert node.manager.liveness_failure(UID, "app") is None
    assert node.changes == []
    await node.clock.advance(10)
    assert node.manager.liveness_failure(UID, "app") == \
        "Container app failed liveness probe, will be restarted"
    assert node.changes == [UID]
    assert node.events == [("Warning", "Unhealthy", "Liveness probe failed: live exited 1")] * 3


async def test_a_success_in_between_restarts_the_failure_count(node: Node) -> None:
    node.exit_codes["live"] = 1
    node.run(make_pod(livenessProbe=exec_probe("live", failureThreshold=2)))
    node.exit_codes["live"] = 0
    await node.clock.advance(10)
    node.exit_codes["live"] = 1
    await node.clock.advance(10)
    assert node.manager.liveness_failure(UID, "app") is None
    await node.clock.advance(10)
    assert node.manager.liveness_failure(UID, "app") is not None


async def test_readiness_flips_after_success_and_failure_thresholds(node: Node) -> None:
    node.exit_codes["ready"] = 0
    node.run(make_pod(readinessProbe=exec_probe("ready", successThreshold=3,
                                                failureThreshold=2)))
    await node.clock.advance(10)
    assert node.changes == []
    await node.clock.advance(10)
    assert node.changes == [UID]
    assert node.manager.is_ready(UID, "app")
    node.exit_codes["ready"] = 1
    await node.clock.advance(10)
    assert node.manager.is_ready(UID, "app")
    await node.clock.advance(10)
    assert node.changes == [UID, UID]
    assert not node.manager.is_ready(UID, "app")
    assert node.events[-1] == ("Warning", "Unhealthy", "Readiness probe failed: ready exited 1")


async def test_a_container_that_is_not_ready_is_probed_again_when_asked(node: Node) -> None:
    node.run(make_pod(readinessProbe=exec_probe("ready", successThreshold=2)))
    await settle()
    assert node.probed("ready") == 1
    assert not node.manager.is_ready(UID, "app")  # asks for a probe now, not in 10 s
    await settle()
    assert node.probed("ready") == 2
    assert node.manager.is_ready(UID, "app")


async def test_without_probes_a_running_container_is_started_and_ready(node: Node) -> None:
    node.run(make_pod())
    assert node.manager.is_started(UID, "app")
    assert node.manager.is_ready(UID, "app")
    assert node.manager.liveness_failure(UID, "app") is None


# -- timing -------------------------------------------------------------------------------

async def test_probes_wait_for_the_initial_delay(node: Node) -> None:
    node.run(make_pod(livenessProbe=exec_probe("live", initialDelaySeconds=15)))
    await node.clock.advance(10)
    assert node.probed("live") == 0
    await node.clock.advance(10)
    assert node.probed("live") == 1


async def test_initial_delay_counts_from_the_container_start(node: Node) -> None:
    node.run(make_pod(livenessProbe=exec_probe("live", initialDelaySeconds=15)), age=60)
    await settle()
    assert node.probed("live") == 1


async def test_probes_run_every_period_seconds(node: Node) -> None:
    node.run(make_pod(livenessProbe=exec_probe("live", periodSeconds=3)))
    await node.clock.advance(30)
    assert node.probed("live") == 11


# -- startup ------------------------------------------------------------------------------

async def test_startup_probe_gates_liveness_and_readiness(node: Node) -> None:
    node.exit_codes["start"] = 1
    node.run(make_pod(startupProbe=exec_probe("start", failureThreshold=5),
                      livenessProbe=exec_probe("live"), readinessProbe=exec_probe("ready")))
    await node.clock.advance(10)
    assert node.probed("start") == 2
    assert node.probed("live") == node.probed("ready") == 0
    assert not node.manager.is_started(UID, "app")
    assert not node.manager.is_ready(UID, "app")
    node.exit_codes["start"] = 0
    await node.clock.advance(10)
    assert node.manager.is_started(UID, "app")
    assert node.changes  # the pod worker hears of it
    startup_probes = node.probed("start")
    await node.clock.advance(20)
    assert node.probed("start") == startup_probes  # done once the container started
    assert node.probed("live") >= 2
    assert node.manager.is_ready(UID, "app")


async def test_startup_failure_kills_the_container(node: Node) -> None:
    node.exit_codes["start"] = 1
    node.run(make_pod(startupProbe=exec_probe("start", failureThreshold=2)))
    await node.clock.advance(10)
    assert node.manager.startup_failure(UID, "app") == \
        "Container app failed startup probe, will be restarted"
    assert node.events[-1] == ("Warning", "Unhealthy", "Startup probe failed: start exited 1")
    assert node.manager.liveness_failure(UID, "app") is None


# -- restarts -----------------------------------------------------------------------------

async def test_after_a_liveness_failure_the_worker_waits_for_a_new_container(node: Node) -> None:
    node.exit_codes["live"] = 1
    pod = make_pod(livenessProbe=exec_probe("live", failureThreshold=1))
    node.run(pod)
    await node.clock.advance(30)
    assert node.execs == [("c1", "live")]
    node.exit_codes["live"] = 0
    node.run(pod, "c2")
    assert node.manager.liveness_failure(UID, "app") is None
    await node.clock.advance(10)
    assert node.execs[-1] == ("c2", "live")


async def test_a_new_container_starts_not_started_and_not_ready(node: Node) -> None:
    pod = make_pod(startupProbe=exec_probe("start"), readinessProbe=exec_probe("ready"))
    node.run(pod)
    await node.clock.advance(10)
    assert node.manager.is_started(UID, "app")
    assert node.manager.is_ready(UID, "app")
    node.run(pod, "c2")
    assert not node.manager.is_started(UID, "app")
    assert not node.manager.is_ready(UID, "app")


async def test_a_container_that_is_not_running_is_neither_probed_nor_ready(node: Node) -> None:
    pod = make_pod(readinessProbe=exec_probe("ready"))
    node.manager.update_pod(pod, {})
    await node.clock.advance(30)
    assert node.execs == []
    assert not node.manager.is_ready(UID, "app")


async def test_restart_policy_never_is_not_promised_a_restart(node: Node) -> None:
    node.exit_codes["live"] = 1
    pod = make_pod(livenessProbe=exec_probe("live", failureThreshold=1))
    pod["spec"]["restartPolicy"] = "Never"
    node.run(pod)
    await settle()
    assert node.manager.liveness_failure(UID, "app") == "Container app failed liveness probe"


# -- errors and warnings ------------------------------------------------------------------

async def test_a_probe_that_cannot_run_is_retried_reported_and_ignored(node: Node) -> None:
    node.exec_error = RuntimeError("container not found")
    node.run(make_pod(livenessProbe=exec_probe("live", failureThreshold=1)))
    await node.clock.advance(10)
    assert node.probed("live") == 6  # 3 attempts per period
    assert node.events == [("Warning", "Unhealthy",
                            "Liveness probe errored: container not found")] * 2
    assert node.manager.liveness_failure(UID, "app") is None


@pytest.fixture
async def redirecting_port() -> AsyncIterator[int]:
    """An HTTP server whose /healthz redirects to another host."""
    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"http://localhost:{request.url.port}/", text="elsewhere")

    app = web.Application()
    app.router.add_get("/healthz", redirect)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def test_a_redirect_elsewhere_counts_as_success_with_a_warning(
        node: Node, redirecting_port: int) -> None:
    probe = {"httpGet": {"path": "/healthz", "port": redirecting_port}, "periodSeconds": 10}
    node.run(make_pod(readinessProbe=probe))
    async with asyncio.timeout(30):  # a real HTTP probe: a bound for failures only
        while not node.changes:
            await asyncio.sleep(0.01)
    assert node.manager.is_ready(UID, "app")
    assert node.events == [("Warning", "ProbeWarning", "Readiness probe warning: Probe "
                            "terminated redirects, Response body: elsewhere")]


async def test_probes_use_the_runtime_pod_ip_before_the_api_has_it(
        node: Node, redirecting_port: int) -> None:
    pod = make_pod(livenessProbe={"httpGet": {"path": "/healthz", "port": redirecting_port}})
    del pod["status"]["podIP"]
    node.manager.update_pod(pod, {"app": RunningContainer("c1", node.clock.now())},
                            pod_ip="127.0.0.1")
    async with asyncio.timeout(30):  # a real HTTP probe: a bound for failures only
        while not node.events:
            await asyncio.sleep(0.01)
    assert node.events[0][1] == "ProbeWarning"


# -- pod lifecycle ------------------------------------------------------------------------

async def test_a_terminating_pod_keeps_only_its_readiness_probe(node: Node) -> None:
    node.exit_codes["live"] = 1
    pod = make_pod(startupProbe=exec_probe("start"), livenessProbe=exec_probe("live"),
                   readinessProbe=exec_probe("ready"))
    node.run(pod)
    await node.clock.advance(10)
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    node.run(pod)
    probes = (node.probed("start"), node.probed("live"))
    await node.clock.advance(40)
    assert (node.probed("start"), node.probed("live")) == probes
    assert node.probed("ready") >= 4
    assert node.manager.liveness_failure(UID, "app") is None
    assert node.manager.is_started(UID, "app")


async def test_workers_of_a_finished_pod_end(node: Node) -> None:
    pod = make_pod(livenessProbe=exec_probe("live"))
    node.run(pod)
    await settle()
    pod["status"]["phase"] = "Succeeded"
    await node.clock.advance(30)
    assert node.probed("live") == 1


async def test_remove_pod_stops_its_workers(node: Node) -> None:
    node.run(make_pod(livenessProbe=exec_probe("live"), readinessProbe=exec_probe("ready")))
    await settle()
    node.manager.remove_pod(UID)
    await node.clock.advance(30)
    assert node.execs == [("c1", "live"), ("c1", "ready")] or \
        node.execs == [("c1", "ready"), ("c1", "live")]


async def test_sidecar_containers_are_probed(node: Node) -> None:
    pod = make_pod()
    pod["spec"]["initContainers"] = [{"name": "proxy", "restartPolicy": "Always",
                                      "livenessProbe": exec_probe("live")},
                                     {"name": "setup", "livenessProbe": exec_probe("start")}]
    node.manager.update_pod(pod, {"proxy": RunningContainer("s1", node.clock.now()),
                                  "setup": RunningContainer("i1", node.clock.now())})
    await settle()
    assert node.execs == [("s1", "live")]


async def test_stop_ends_every_worker(node: Node) -> None:
    node.run(make_pod(livenessProbe=exec_probe("live"), readinessProbe=exec_probe("ready"),
                      startupProbe=exec_probe("start")))
    await settle()
    await node.manager.stop()
    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("probe-")]
