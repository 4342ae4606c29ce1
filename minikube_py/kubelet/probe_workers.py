"""The prober manager: one worker task per container probe, and the verdicts they cache.

Upstream `pkg/kubelet/prober/prober_manager.go` and `worker.go`. For every container with
a startupProbe, readinessProbe or livenessProbe the manager runs a worker that, every
periodSeconds:

1. skips while the container is not running, or younger than initialDelaySeconds;
2. runs only the startup probe until the container has started, then only the others;
3. runs the probe (prober.py; an attempt that could not run is retried up to 3 times and
   then thrown away), records an Unhealthy event for each failure;
4. changes the cached result only after failureThreshold failures or successThreshold
   successes in a row, and calls on_change(uid) when it flips, so the pod worker syncs;
5. after a liveness or startup failure, holds still until the container is replaced.

The pod worker reads the verdicts: is_started / is_ready for the container statuses,
liveness_failure / startup_failure to decide that a container must be killed. Results
belong to one container instance: a new container id starts from the initial values
(not started, not ready, alive). When a pod starts terminating its liveness and startup
workers stop (a container being shut down is not restarted for failing them); readiness
keeps being probed until remove_pod.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from minikube_py.api import Obj
from minikube_py.kubelet.prober import ExecSync, ProbeResult, run_probe

RecordEvent = Callable[[Obj, str, str, str], None]

LIVENESS, READINESS, STARTUP = "Liveness", "Readiness", "Startup"
PROBE_FIELDS = {STARTUP: "startupProbe", READINESS: "readinessProbe", LIVENESS: "livenessProbe"}
# The value a worker reports for a new container before its first verdict.
INITIAL_RESULTS = {STARTUP: ProbeResult.UNKNOWN, READINESS: ProbeResult.FAILURE,
                   LIVENESS: ProbeResult.SUCCESS}
MAX_PROBE_RETRIES = 3
DEFAULT_PERIOD_SECONDS = 10
DEFAULT_SUCCESS_THRESHOLD = 1
DEFAULT_FAILURE_THRESHOLD = 3


class Clock:
    """Wall time and waiting; tests substitute a clock that moves only when told."""

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass(frozen=True)
class RunningContainer:
    """A running instance of a container: its runtime id and start (wall-clock seconds)."""

    container_id: str
    started_at: float


@dataclass
class _Worker:
    """Upstream's worker: one probe of one container of one pod, and its cached result."""

    uid: str
    container: Obj
    kind: str
    probe: Obj
    container_id: str | None = None
    started_at: float = 0.0
    running: bool = False
    result: ProbeResult = ProbeResult.UNKNOWN
    last_result: ProbeResult | None = None
    result_run: int = 0
    on_hold: bool = False
    trigger: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return self.uid, self.container["name"], self.kind

    def follow(self, running: RunningContainer) -> None:
        """A new container instance: forget the old one's results and resume probing."""
        self.container_id, self.started_at = running.container_id, running.started_at
        self.result, self.last_result, self.result_run = INITIAL_RESULTS[self.kind], None, 0
        self.on_hold = False


class ProbeManager:
    """prober.Manager: starts, feeds and stops the probe workers of the node's pods."""

    def __init__(self, exec_sync: ExecSync, *, on_change: Callable[[str], None],
                 record_event: RecordEvent, clock: Clock | None = None) -> None:
        self.exec_sync = exec_sync
        self.on_change = on_change
        self.record_event = record_event
        self.clock = clock or Clock()
        self._pods: dict[str, Obj] = {}
        self._pod_ips: dict[str, str] = {}
        self._workers: dict[tuple[str, str, str], _Worker] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # -- the pod worker's side ----------------------------------------------------------

    def update_pod(self, pod: Obj, running: dict[str, RunningContainer], *,
                   pod_ip: str = "") -> None:
        """After each sync: start the pod's workers the first time (AddPod), stop liveness
        and startup once it terminates, and point every worker at the container instance
        now running (or note that none is). pod_ip is the sandbox's IP as the runtime
        reports it, for probes that run before status.podIP reaches the API."""
        uid = pod["metadata"]["uid"]
        first_time = uid not in self._pods
        self._pods[uid] = pod
        self._pod_ips[uid] = pod_ip or (pod.get("status") or {}).get("podIP", "")
        terminating = bool(pod["metadata"].get("deletionTimestamp"))
        if first_time:
            for container in probed_containers(pod):
                for kind, name in PROBE_FIELDS.items():
                    if container.get(name) and not (terminating and kind != READINESS):
                        self._start_worker(_Worker(uid, container, kind, container[name]))
        for worker in [w for w in self._workers.values() if w.uid == uid]:
            if terminating and worker.kind != READINESS:
                self._stop_worker(worker)
                continue
            current = running.get(worker.container["name"])
            worker.running = current is not None
            if current is not None and current.container_id != worker.container_id:
                worker.follow(current)

    def remove_pod(self, uid: str) -> None:
        """RemovePod: stop the pod's workers and forget their results."""
        self._pods.pop(uid, None)
        self._pod_ips.pop(uid, None)
        for worker in [w for w in self._workers.values() if w.uid == uid]:
            self._stop_worker(worker)

    def is_started(self, uid: str, name: str) -> bool:
        """containerStatuses[].started of a running container: its startup probe has
        succeeded, or it has none."""
        worker = self._workers.get((uid, name, STARTUP))
        return worker is None or (worker.running and worker.result is ProbeResult.SUCCESS)

    def is_ready(self, uid: str, name: str) -> bool:
        """containerStatuses[].ready of a running container: started, and its readiness
        probe has succeeded (or it has none). Not yet ready with a probe: probe now rather
        than at the next period, as upstream's UpdatePodStatus does."""
        if not self.is_started(uid, name):
            return False
        worker = self._workers.get((uid, name, READINESS))
        if worker is None:
            return True
        if worker.running and worker.result is ProbeResult.SUCCESS:
            return True
        worker.trigger.set()
        return False

    def liveness_failure(self, uid: str, name: str) -> str | None:
        """Why the running container must be killed for failing its liveness probe, or None."""
        return self._failure(uid, name, LIVENESS)

    def startup_failure(self, uid: str, name: str) -> str | None:
        """Why the running container must be killed for failing its startup probe, or None."""
        return self._failure(uid, name, STARTUP)

    def _failure(self, uid: str, name: str, kind: str) -> str | None:
        worker = self._workers.get((uid, name, kind))
        if worker is None or not worker.running or worker.result is not ProbeResult.FAILURE:
            return None
        message = f"Container {name} failed {kind.lower()} probe"
        pod = self._pods.get(uid) or {}
        restarts = ((pod.get("spec") or {}).get("restartPolicy") != "Never"
                    or worker.container.get("restartPolicy") == "Always")
        return f"{message}, will be restarted" if restarts else message

    async def stop(self) -> None:
        """Cancel every worker and wait for them to end."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self._workers.clear()
        self._pods.clear()
        self._pod_ips.clear()

    # -- the workers --------------------------------------------------------------------

    def _start_worker(self, worker: _Worker) -> None:
        self._workers[worker.key] = worker
        worker.task = asyncio.create_task(
            self._run(worker), name=f"probe-{worker.kind.lower()}-{worker.uid}-"
                                    f"{worker.container['name']}")
        self._tasks.add(worker.task)
        worker.task.add_done_callback(self._tasks.discard)

    def _stop_worker(self, worker: _Worker) -> None:
        if self._workers.get(worker.key) is worker:
            del self._workers[worker.key]
        if worker.task is not None:
            worker.task.cancel()

    async def _run(self, worker: _Worker) -> None:
        """worker.run: probe, then wait a period (or for a manual trigger), until told to
        stop or the pod has finished."""
        try:
            while await self._do_probe(worker):
                await self._wait(worker)
        finally:
            if self._workers.get(worker.key) is worker:
                del self._workers[worker.key]

    async def _wait(self, worker: _Worker) -> None:
        period = float(worker.probe.get("periodSeconds") or DEFAULT_PERIOD_SECONDS)
        waits = {asyncio.ensure_future(self.clock.sleep(period)),
                 asyncio.ensure_future(worker.trigger.wait())}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
            worker.trigger.clear()

    async def _do_probe(self, worker: _Worker) -> bool:
        """doProbe: probe once if it is time to, and record the verdict; False ends the
        worker."""
        pod = self._pods.get(worker.uid)
        if pod is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return False
        if worker.container_id is None or worker.on_hold or not worker.running:
            return True
        delay = float(worker.probe.get("initialDelaySeconds") or 0)
        if self.clock.now() - worker.started_at < delay:
            return True
        started = self.is_started(worker.uid, worker.container["name"])
        if worker.kind == STARTUP and started:
            return True  # the startup probe is done; it waits for a restarted container
        if worker.kind != STARTUP and not started:
            return True  # liveness and readiness wait for the startup probe
        probed_id = worker.container_id
        result = await self._probe(worker, pod)
        if result is ProbeResult.UNKNOWN or worker.container_id != probed_id:
            return True  # could not probe, or the container was replaced meanwhile
        self._record(worker, result)
        return True

    async def _probe(self, worker: _Worker, pod: Obj) -> ProbeResult:
        """prober.probe: run the probe (retrying attempts that could not run), record the
        Unhealthy or ProbeWarning event, and count a warning as a success."""
        pod_ip = self._pod_ips.get(worker.uid, "")
        for _ in range(MAX_PROBE_RETRIES):
            result, output = await run_probe(worker.probe, pod, worker.container,
                                             worker.container_id or "", pod_ip=pod_ip,
                                             exec_sync=self.exec_sync)
            if result is not ProbeResult.UNKNOWN:
                break
        if result is ProbeResult.UNKNOWN:
            self.record_event(pod, "Warning", "Unhealthy", f"{worker.kind} probe errored: {output}")
        elif result is ProbeResult.FAILURE:
            self.record_event(pod, "Warning", "Unhealthy", f"{worker.kind} probe failed: {output}")
        elif result is ProbeResult.WARNING:
            self.record_event(pod, "Warning", "ProbeWarning",
                              f"{worker.kind} probe warning: {output}")
            result = ProbeResult.SUCCESS
        return result

    def _record(self, worker: _Worker, result: ProbeResult) -> None:
        """Count the result run; past its threshold the result becomes the verdict."""
        if result is worker.last_result:
            worker.result_run += 1
        else:
            worker.last_result, worker.result_run = result, 1
        threshold = (worker.probe.get("failureThreshold") or DEFAULT_FAILURE_THRESHOLD
                     if result is ProbeResult.FAILURE
                     else worker.probe.get("successThreshold") or DEFAULT_SUCCESS_THRESHOLD)
        if worker.result_run < threshold:
            return
        if worker.kind != READINESS and result is ProbeResult.FAILURE:
            worker.on_hold, worker.result_run = True, 0  # until the container is replaced
        if worker.result is not result:
            worker.result = result
            self.on_change(worker.uid)


def probed_containers(pod: Obj) -> list[Obj]:
    """The containers that can have probes: app containers and sidecars (init containers
    with restartPolicy Always)."""
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    return [*sidecars, *(spec.get("containers") or [])]
