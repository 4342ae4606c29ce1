"""DefaultBinder: Bind: write the decision, a Binding to the chosen node, to the API server."""

from __future__ import annotations

from minikube_py.client.errors import ClientError
from minikube_py.scheduler.framework.interface import BindPlugin, CycleState, Status
from minikube_py.scheduler.framework.types import PodInfo


class DefaultBinder(BindPlugin):
    """POST pods/<name>/binding: the API server sets spec.nodeName and PodScheduled."""

    name = "DefaultBinder"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        assert self.handle is not None and self.handle.client is not None
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": pod.name, "namespace": pod.namespace,
                                "uid": pod.uid},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        try:
            await self.handle.client.resource("pods").create(
                binding, pod.namespace, name=pod.name, subresource="binding")
        except ClientError as error:
            return Status.error(str(error))
        return Status.success()
