"""What the Job controller's helper modules share with it: the state of one sync, and
the few controller members that status tracking uses. The helpers import these, not
controller.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from minikube_py.api import Obj
from minikube_py.client.events import EventRecorder
from minikube_py.client.rest import ResourceClient
from minikube_py.controllers.job.backoff import BackoffRecord


@dataclass
class SyncState:
    """syncJobCtx: what one sync has learned about a Job and its pods."""

    job: Obj
    pods: list[Obj]
    active_pods: list[Obj]
    uncounted_succeeded: set[str]
    uncounted_failed: set[str]
    expected_removals: set[str]  # pods whose finalizer removal the cache has not shown yet
    ready: int = 0
    terminating: int = 0
    succeeded: int = 0
    failed: int = 0
    finished: Obj | None = None  # the condition the Job is heading for
    backoff: BackoffRecord = field(default_factory=BackoffRecord)
    prev_succeeded_indexes: set[int] = field(default_factory=set)
    succeeded_indexes: set[int] = field(default_factory=set)


class JobControl(Protocol):
    """The members of JobController that tracking.py uses (upstream's helpers are
    methods on the controller, `jm`)."""

    jobs_client: ResourceClient
    pods_client: ResourceClient
    recorder: EventRecorder
    finalizer_expectations: dict[str, set[str]]  # uidTrackingExpectations, per Job key
    backoff_records: dict[str, BackoffRecord]

    def now(self) -> datetime: ...
