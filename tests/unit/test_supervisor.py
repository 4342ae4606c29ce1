"""The supervisor's restart decisions, on stand-in processes and a clock of the test's."""

from __future__ import annotations

from pathlib import Path

from minikube_py.cluster.supervisor import Supervisor
from minikube_py.process import ComponentProcess, ComponentProcessError


class Standin(ComponentProcess):
    """A component whose life the test decides; start() makes it run (or fails)."""

    component = "stand-in"

    def __init__(self) -> None:
        super().__init__(Path("/dev/null"), start_timeout=1, stop_timeout=1)
        self.alive = False
        self.starts = 0
        self.fail = False

    def command(self) -> list[str]:
        return ["true"]

    def adopt(self) -> bool:
        return self.alive

    async def start(self) -> None:
        self.starts += 1
        if self.fail:
            raise ComponentProcessError("port 1 is already in use")
        self.alive = True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_dead_component_restarts_at_once_then_with_growing_backoff() -> None:
    scheduler, clock = Standin(), Clock()
    supervisor = Supervisor({"scheduler": scheduler}, clock=clock)
    assert await supervisor.check() == ["scheduler"]  # dead at the first look: at once
    scheduler.alive = False  # dies again at once
    assert await supervisor.check() == []  # 1 s backoff
    clock.now += 1.0
    assert await supervisor.check() == ["scheduler"]
    scheduler.alive = False
    clock.now += 1.0
    assert await supervisor.check() == []  # now 2 s
    clock.now += 1.0
    assert await supervisor.check() == ["scheduler"]
    assert scheduler.starts == 3


async def test_a_component_up_for_a_minute_starts_afresh() -> None:
    apiserver, clock = Standin(), Clock()
    supervisor = Supervisor({"apiserver": apiserver}, clock=clock)
    for _ in range(4):  # backoff grows to 8 s
        apiserver.alive = False
        clock.now += 30
        await supervisor.check()
    assert supervisor.backoff["apiserver"] == 8.0
    await supervisor.check()  # seen up
    clock.now += 61
    await supervisor.check()  # up for over a minute
    apiserver.alive = False
    assert await supervisor.check() == ["apiserver"]  # no delay
    assert supervisor.backoff["apiserver"] == 1.0


async def test_a_failed_restart_is_retried_after_the_backoff() -> None:
    dns, clock = Standin(), Clock()
    dns.fail = True
    supervisor = Supervisor({"dns": dns}, clock=clock)
    assert await supervisor.check() == []
    assert dns.starts == 1
    clock.now += 0.5
    await supervisor.check()
    assert dns.starts == 1  # within the backoff
    dns.fail = False
    clock.now += 0.5
    assert await supervisor.check() == ["dns"]


async def test_a_nodes_containerd_is_restarted_like_the_rest() -> None:
    containerd, kubelet = Standin(), Standin()
    supervisor = Supervisor({"node-1/containerd": containerd, "node-1/kubelet": kubelet},
                            clock=Clock())
    assert await supervisor.check() == ["node-1/containerd", "node-1/kubelet"]
    assert containerd.starts == 1
