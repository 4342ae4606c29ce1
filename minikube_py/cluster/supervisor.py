"""The launcher's supervisor: restarts a component that died, with backoff.

`minikube-py up` starts it last, as a daemon like the others; `down` stops it first, so
it never fights a deliberate stop. Once a second it looks at every component's pid file:
one that is not running is started again (its log says so), at once the first time,
then after 1, 2, 4 ... up to 30 s while it keeps dying; a component that stayed up for a
minute starts afresh at no delay. A node's containerd is restarted like the rest: its
containers keep running under their shims meanwhile, and the new containerd re-attaches
to them (runtime_setup.py), so the node's pods live on untouched.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from minikube_py.process import ComponentProcess, ComponentProcessError

log = logging.getLogger("minikube_py.cluster.supervisor")

CHECK_PERIOD = 1.0  # seconds between looks
BACKOFF_INITIAL, BACKOFF_MAX = 1.0, 30.0  # seconds before another restart of a failing one
STABLE_AFTER = 60.0  # seconds up after which a component's backoff starts afresh


class SupervisorProcess(ComponentProcess):
    """`python -m minikube_py.cluster supervise`, as a daemon."""

    component = "the supervisor"

    def __init__(self, log_path: Path, pid_file: Path) -> None:
        super().__init__(log_path, start_timeout=10.0, stop_timeout=10.0, pid_file=pid_file)

    def command(self) -> list[str]:
        return [sys.executable, "-m", "minikube_py.cluster", "supervise"]


class Supervisor:
    """Keeps `processes` running; the restart decisions of one look are in `check()`."""

    def __init__(self, processes: Mapping[str, ComponentProcess],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.processes = dict(processes)
        self.clock = clock
        self.backoff: dict[str, float] = {}  # name -> the delay before its next restart
        self.next_try: dict[str, float] = {}
        self.up_since: dict[str, float] = {}

    async def run(self) -> None:
        log.warning("supervising %s", ", ".join(self.processes))
        while True:
            await self.check()
            await asyncio.sleep(CHECK_PERIOD)

    async def check(self) -> list[str]:
        """One look: restart what is due; returns the names restarted."""
        restarted = []
        for name, process in self.processes.items():
            now = self.clock()
            if process.adopt():
                since = self.up_since.setdefault(name, now)
                if now - since >= STABLE_AFTER:
                    self.backoff.pop(name, None)
                continue
            self.up_since.pop(name, None)
            if now < self.next_try.get(name, 0.0):
                continue
            delay = self.backoff.get(name, 0.0)
            log.warning("%s is not running: starting it again (next backoff %.0f s)", name,
                        max(delay * 2, BACKOFF_INITIAL))
            try:
                await process.start()
            except (ComponentProcessError, OSError) as error:
                log.error("%s did not start: %s", name, error)
            else:
                log.warning("%s is running again (pid %s)", name, process.pid)
                self.up_since[name] = self.clock()
                restarted.append(name)
            self.backoff[name] = min(max(delay * 2, BACKOFF_INITIAL), BACKOFF_MAX)
            self.next_try[name] = self.clock() + self.backoff[name]
        return restarted
