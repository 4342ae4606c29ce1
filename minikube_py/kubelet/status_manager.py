"""The status manager: write a pod's status to the API server, only when it changed.

Upstream `pkg/kubelet/status/status_manager.go`. The kubelet computes a status after
every sync; this writes it through the `pods/status` subresource as a merge patch that
names the pod's uid (a precondition: a pod recreated under the same name is never
touched), and remembers what it wrote so an unchanged status costs nothing. It also
makes the final call for a terminated pod: DELETE with grace period 0.

A static pod (config_file.py) has no API object of its own: its status goes to its
mirror pod (mirror_client.py), under the mirror pod's UID, and waits while there is no
mirror pod of this version of the manifest (upstream's syncBatch translates the UID the
same way, and skips a static pod without one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from minikube_py.api import Obj
from minikube_py.client.errors import ClientError, Conflict, NotFound
from minikube_py.client.logs import log_v
from minikube_py.client.rest import Client
from minikube_py.kubelet.mirror_client import is_static_pod

log = logging.getLogger(__name__)


def _comparable(status: Obj) -> Obj:
    """The status without the times the kubelet stamps, to tell a real change."""
    conditions = [{k: v for k, v in c.items() if k not in ("lastProbeTime",
                                                             "lastTransitionTime")}
                  for c in status.get("conditions") or []]
    return {**status, "conditions": conditions}


class StatusManager:
    def __init__(self, client: Client,
                 mirror_pod_of: Callable[[Obj], Obj | None] = lambda pod: None) -> None:
        self.pods = client.resource("pods")
        self.mirror_pod_of = mirror_pod_of  # a static pod -> its mirror pod, if there is one
        self._written: dict[str, Obj] = {}  # API pod uid -> the status last written

    def needs_update(self, pod: Obj, status: Obj) -> bool:
        uid = pod["metadata"]["uid"]
        before = self._written.get(uid)
        if before is None:
            current = pod.get("status") or {}
            before = {key: current.get(key) for key in status}
        return _comparable(before) != _comparable(status)

    async def set_pod_status(self, pod: Obj, status: Obj) -> bool:
        """Write `status` if it differs from what was last written; True if it wrote.
        A static pod's goes to its mirror pod."""
        target = pod
        if is_static_pod(pod):
            mirror = self.mirror_pod_of(pod)
            if mirror is None:
                log_v(log, 5, "Static pod does not have a corresponding mirror pod; skipping",
                      pod=f"{pod['metadata']['namespace']}/{pod['metadata']['name']}")
                return False
            target = mirror
        if not self.needs_update(target, status):
            return False
        meta = target["metadata"]
        patch = {"metadata": {"uid": meta["uid"]}, "status": status}
        try:
            await self.pods.patch(meta["name"], patch, meta["namespace"],
                                  subresource="status")
        except (NotFound, Conflict):
            log.debug("pod %s/%s is gone; status not written", meta["namespace"],
                      meta["name"])
            return False
        except ClientError as error:
            if target is pod:
                raise
            # a static pod runs on without the API server; its next sync writes again
            log.warning("could not write the status of mirror pod %s/%s: %s",
                        meta["namespace"], meta["name"], error)
            return False
        self._written[meta["uid"]] = status
        return True

    async def delete_pod(self, pod: Obj) -> None:
        """The last step of termination: remove the API object (grace 0, same uid only)."""
        meta = pod["metadata"]
        try:
            await self.pods.delete(meta["name"], meta["namespace"], grace_period_seconds=0,
                                   preconditions={"uid": meta["uid"]})
        except (NotFound, Conflict):
            pass
        except ClientError as error:
            log.warning("could not delete pod %s/%s: %s", meta["namespace"], meta["name"],
                        error)
            raise

    def forget(self, uid: str) -> None:
        self._written.pop(uid, None)
