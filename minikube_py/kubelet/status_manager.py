"""The status manager: write a pod's status to the API server, only when it changed.

Upstream `pkg/kubelet/status/status_manager.go`. The kubelet computes a status after
every sync; this writes it through the `pods/status` subresource as a merge patch that
names the pod's uid (a precondition: a pod recreated under the same name is never
touched), and remembers what it wrote so an unchanged status costs nothing. It also
makes the final call for a terminated pod: DELETE with grace period 0.
"""

from __future__ import annotations

import logging
from typing import Any

from minikube_py.client.errors import APIStatusError, Conflict, NotFound
from minikube_py.client.rest import Client, ConnectionFailed

Obj = dict[str, Any]
log = logging.getLogger(__name__)


def _comparable(status: Obj) -> Obj:
    """The status without the times the kubelet stamps, to tell a real change."""
    conditions = [{k: v for k, v in c.items() if k not in ("lastProbeTime",
                                                             "lastTransitionTime")}
                  for c in status.get("conditions") or []]
    return {**status, "conditions": conditions}


class StatusManager:
    def __init__(self, client: Client) -> None:
        self.pods = client.resource("pods")
        self._written: dict[str, Obj] = {}

    def needs_update(self, pod: Obj, status: Obj) -> bool:
        uid = pod["metadata"]["uid"]
        before = self._written.get(uid)
        if before is None:
            current = pod.get("status") or {}
            before = {key: current.get(key) for key in status}
        return _comparable(before) != _comparable(status)

    async def set_pod_status(self, pod: Obj, status: Obj) -> bool:
        """Write `status` if it differs from what was last written; True if it wrote."""
        if not self.needs_update(pod, status):
            return False
        meta = pod["metadata"]
        patch = {"metadata": {"uid": meta["uid"]}, "status": status}
        try:
            await self.pods.patch(meta["name"], patch, meta["namespace"],
                                  subresource="status")
        except (NotFound, Conflict):
            log.debug("pod %s/%s is gone; status not written", meta["namespace"],
                      meta["name"])
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
        except (APIStatusError, ConnectionFailed) as error:
            log.warning("could not delete pod %s/%s: %s", meta["namespace"], meta["name"],
                        error)
            raise

    def forget(self, uid: str) -> None:
        self._written.pop(uid, None)
