"""The ConfigMap kube-system/cluster-autoscaler-status, as upstream writes it (its YAML
status, clusterstate/api): the autoscaler's health, and per node group its node counts,
target, sizes, whether a scale-up is in progress and how many scale-down candidates.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import yaml

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339
from minikube_py.api.podutil import pod_condition
from minikube_py.autoscaler.nodegroup import NODE_GROUP_LABEL, NodeGroup
from minikube_py.client.errors import APIStatusError, NotFound
from minikube_py.client.rest import Client

log = logging.getLogger(__name__)
NAMESPACE = "kube-system"
LAST_UPDATED = "cluster-autoscaler.kubernetes.io/last-updated"


def go_time(moment: datetime) -> str:
    """Go's time.Time String(), as the status's `time` shows it."""
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f") + " +0000 UTC"


class StatusWriter:
    """Writes the status each loop; a condition's lastTransitionTime moves on change."""

    def __init__(self, client: Client, name: str) -> None:
        self.client, self.name = client, name
        self.transitions: dict[str, tuple[str, str]] = {}  # part -> (status, since)

    def _part(self, key: str, status: str, now: str, **extra: object) -> Obj:
        previous = self.transitions.get(key)
        if previous is None or previous[0] != status:
            self.transitions[key] = (status, now)
        return {"status": status, **extra, "lastProbeTime": now,
                "lastTransitionTime": self.transitions[key][1]}

    def render(self, group: NodeGroup, nodes: list[Obj], scaling_up: bool,
               candidates: list[str], moment: datetime) -> str:
        """The status document (YAML)."""
        now = rfc3339(moment)
        ours = [n for n in nodes
                if (n["metadata"].get("labels") or {}).get(NODE_GROUP_LABEL) == group.name]

        def counts(members: list[Obj], expected: int) -> Obj:
            ready = sum((pod_condition(n, "Ready") or {}).get("status") == "True"
                        for n in members)
            return {"registered": {"total": len(members), "ready": ready,
                                   "notStarted": len(members) - ready},
                    "longUnregistered": 0,
                    "unregistered": max(0, expected - len(members))}

        scale_up = "InProgress" if scaling_up else "NoActivity"
        scale_down = "CandidatesPresent" if candidates else "NoCandidates"
        document = {
            "time": go_time(moment),
            "autoscalerStatus": "Running",
            "clusterWide": {
                "health": self._part("health", "Healthy", now,
                                     nodeCounts=counts(nodes, len(nodes))),
                "scaleUp": self._part("scaleUp", scale_up, now),
                "scaleDown": self._part("scaleDown", scale_down, now,
                                        candidates=len(candidates)),
            },
            "nodeGroups": [{
                "name": group.name,
                "health": self._part(f"{group.name}/health", "Healthy", now,
                                     nodeCounts=counts(ours, group.target_size()),
                                     cloudProviderTarget=group.target_size(),
                                     minSize=group.min_size, maxSize=group.max_size),
                "scaleUp": self._part(f"{group.name}/scaleUp", scale_up, now),
                "scaleDown": self._part(f"{group.name}/scaleDown", scale_down, now,
                                        candidates=len(candidates)),
            }],
        }
        return yaml.safe_dump(document, sort_keys=False)

    async def write(self, group: NodeGroup, nodes: list[Obj], scaling_up: bool,
                    candidates: list[str]) -> None:
        """Create or update the ConfigMap (a failure is logged: the next loop retries)."""
        moment = datetime.now(UTC)
        config_maps = self.client.resource("configmaps")
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self.name, "namespace": NAMESPACE,
                             "annotations": {LAST_UPDATED: go_time(moment)}},
                "data": {"status": self.render(group, nodes, scaling_up, candidates,
                                               moment)}}
        try:
            try:
                await config_maps.update(body)
            except NotFound:
                await config_maps.create(body, NAMESPACE)
        except APIStatusError as error:
            log.warning("Failed to write the status ConfigMap: %s", error)
