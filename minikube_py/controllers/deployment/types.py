"""What the rollout helpers need of the Deployment controller: its clients, its cache of
ReplicaSets, its recorder and queue, and its clock. The helpers take this Protocol, not
the controller, so none of them imports controller.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from minikube_py.api import Obj
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import SharedInformer
from minikube_py.client.rest import ResourceClient
from minikube_py.client.workqueue import RateLimitingQueue


class DeploymentControl(Protocol):
    """The members of DeploymentController that sync, rolling, recreate, rollback and
    progress use (upstream's helpers are methods on the controller, `dc`)."""

    deployment_client: ResourceClient
    replica_set_client: ResourceClient
    replica_sets: SharedInformer
    recorder: EventRecorder
    queue: RateLimitingQueue

    def now(self) -> datetime: ...

    def enqueue_after(self, obj: Obj, delay: float) -> None: ...

    async def update_deployment_status(self, d: Obj) -> None:
        """Write d's status through /status; d keeps the new resourceVersion."""
