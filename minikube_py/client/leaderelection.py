"""Leader election on a coordination.k8s.io/v1 Lease (client-go's leaderelection).

Several copies of a component may run; only the holder of the Lease acts.

    acquire: every retry_period, try to write the Lease with ourselves as holder. This
             succeeds when nobody holds it, or when the holder has not renewed it for
             lease_duration seconds *as observed by our own clock* (clocks of different
             machines are never compared).
    renew:   every retry_period, write renewTime again. If no renewal succeeds for
             renew_deadline seconds, leadership is lost: the work is cancelled at once.

Every write is a compare-and-swap on the Lease's resourceVersion, so two candidates can
never both believe they won. Defaults as upstream: 15 s lease, 10 s renew deadline, 2 s
retry period.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from minikube_py.api import Obj
from minikube_py.client.errors import ClientError, NotFound
from minikube_py.client.rest import Client

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2
RELEASE_TIMEOUT = 1.0  # seconds a stopping component tries to hand its Lease over


class LeadershipLost(Exception):
    """The lease could not be renewed within the renew deadline."""


def micro_time(moment: datetime | None = None) -> str:
    """metav1.MicroTime's wire format: RFC 3339 with microseconds."""
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Campaign for one Lease; run the work while holding it, stop the moment it is lost."""

    def __init__(self, client: Client, *, name: str, identity: str,
                 namespace: str = "kube-system", lease_duration: float = 15.0,
                 renew_deadline: float = 10.0, retry_period: float = 2.0) -> None:
        if not lease_duration > renew_deadline > retry_period * JITTER_FACTOR:
            raise ValueError("need lease_duration > renew_deadline > retry_period * 1.2")
        self.leases = client.resource("leases")
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._observed_spec: Obj | None = None
        self._observed_at = 0.0
        self._leading = False

    def is_leader(self) -> bool:
        return self._leading

    async def run(self, work: Callable[[], Awaitable[None]]) -> None:
        """Wait to become leader, then run `work` until it ends or leadership is lost.

        Raises LeadershipLost when the lease could not be renewed; the caller (the
        component's main) exits, as upstream components do.
        """
        await self._acquire()
        log.info("%s: became leader of %s/%s", self.identity, self.namespace, self.name)
        self._leading = True
        work_task = asyncio.create_task(work(), name=f"leader-{self.name}")
        renew_task = asyncio.create_task(self._renew(), name=f"renew-{self.name}")
        try:
            done, _ = await asyncio.wait({work_task, renew_task},
                                         return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the component is shutting down: hand over now
            await self._stop(work_task, renew_task)
            await self._release()
            raise
        if renew_task in done:
            # Another candidate may lead by now: the work gets a moment to stop, and is
            # not waited for beyond it (a step stuck on an API server that is gone must
            # not keep a deposed leader's process alive; its caller exits).
            await self._stop(work_task, renew_task, within=self.retry_period)
            raise LeadershipLost(f"{self.identity} lost the lease {self.namespace}/{self.name}")
        await self._stop(work_task, renew_task)
        await self._release()
        work_task.result()

    async def _stop(self, *tasks: asyncio.Task[None], within: float | None = None) -> None:
        self._leading = False
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=within)

    async def _acquire(self) -> None:
        # client-go's line: in a log that stops here, the Lease is held by someone else
        log.info("%s: attempting to acquire leader lease %s/%s...", self.identity,
                 self.namespace, self.name)
        while not await self._try_acquire_or_renew():
            await asyncio.sleep(self.retry_period * (1 + random.random() * (JITTER_FACTOR - 1)))

    async def _renew(self) -> None:
        """Renew every retry_period; return (lost) once renew_deadline passes without one."""
        last_renewal = time.monotonic()
        while True:
            await asyncio.sleep(self.retry_period)
            remaining = self.renew_deadline - (time.monotonic() - last_renewal)
            try:  # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
                async with asyncio.timeout(remaining):  # cancel that comes as it returns
                    renewed = await self._try_acquire_or_renew()
            except TimeoutError:
                renewed = False
            if renewed:
                last_renewal = time.monotonic()
            elif time.monotonic() - last_renewal >= self.renew_deadline:
                log.error("%s: failed to renew lease %s/%s within %.0fs", self.identity,
                          self.namespace, self.name, self.renew_deadline)
                return

    async def _try_acquire_or_renew(self) -> bool:
        """One attempt: create the Lease, or take it over / renew it by compare-and-swap."""
        now = micro_time()
        try:
            lease = await self.leases.get(self.name, self.namespace)
        except NotFound:
            return await self._create(now)
        except ClientError as failure:
            log.warning("%s: cannot read lease: %s", self.identity, failure)
            return False
        spec = lease.get("spec") or {}
        if spec != self._observed_spec:
            self._observed_spec = copy.deepcopy(spec)
            self._observed_at = time.monotonic()
        holder = spec.get("holderIdentity") or ""
        duration = spec.get("leaseDurationSeconds") or self.lease_duration
        expired = self._observed_at + duration <= time.monotonic()
        if holder and holder != self.identity and not expired:
            return False
        new_spec = dict(spec)
        if holder != self.identity:
            new_spec["acquireTime"] = now
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        new_spec.update(holderIdentity=self.identity,
                        leaseDurationSeconds=int(self.lease_duration), renewTime=now)
        lease["spec"] = new_spec
        try:
            written = await self.leases.update(lease)
        except ClientError as failure:
            log.info("%s: lease update failed: %s", self.identity, failure)
            return False
        self._observed_spec = copy.deepcopy(written.get("spec") or {})
        self._observed_at = time.monotonic()
        return True

    async def _create(self, now: str) -> bool:
        lease = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {"holderIdentity": self.identity,
                     "leaseDurationSeconds": int(self.lease_duration),
                     "acquireTime": now, "renewTime": now, "leaseTransitions": 0},
        }
        try:
            written = await self.leases.create(lease)
        except ClientError as failure:
            log.info("%s: lease create failed: %s", self.identity, failure)
            return False
        self._observed_spec = copy.deepcopy(written.get("spec") or {})
        self._observed_at = time.monotonic()
        return True

    async def _release(self) -> None:
        """Step down cleanly (work ended): empty the holder so others need not wait. A
        server that does not answer within RELEASE_TIMEOUT is not waited for: the Lease
        then expires by itself."""
        try:
            async with asyncio.timeout(RELEASE_TIMEOUT):
                lease = await self.leases.get(self.name, self.namespace)
                if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                    return
                lease["spec"].update(holderIdentity="", leaseDurationSeconds=1,
                                     renewTime=micro_time())
                await self.leases.update(lease)
        except (ClientError, TimeoutError) as failure:
            log.info("%s: could not release the lease: %s", self.identity,
                     str(failure) or f"no answer within {RELEASE_TIMEOUT:.0f}s")
