"""HTTP extenders: a scheduler policy in another process, asked over HTTP (upstream's
HTTPExtender, pkg/scheduler/extender.go).

An extender is configured with a URL prefix and the verbs it serves:

    filter      POST <prefix>/<filterVerb>      ExtenderArgs -> ExtenderFilterResult
                the nodes it lets through; failedNodes and failedAndUnresolvableNodes
                with a reason each
    prioritize  POST <prefix>/<prioritizeVerb>  ExtenderArgs -> HostPriorityList
                a score 0..10 per node, multiplied by the extender's weight
    bind        POST <prefix>/<bindVerb>        ExtenderBindingArgs -> ExtenderBindingResult
                the extender binds the pod itself

ExtenderArgs carry the pod and either the node names (nodeCacheCapable) or the whole
Node objects. An `ignorable` extender that fails is skipped; any other failure fails the
scheduling attempt.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from minikube_py.api import Obj
from minikube_py.scheduler.config import Extender
from minikube_py.scheduler.framework.interface import MAX_NODE_SCORE
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo

MAX_EXTENDER_PRIORITY = 10


class ExtenderError(Exception):
    """The extender could not be reached or answered with an error."""


class HTTPExtender:
    """One configured extender."""

    def __init__(self, config: Extender) -> None:
        self.config = config
        self._session: aiohttp.ClientSession | None = None

    @property
    def name(self) -> str:
        return self.config.url_prefix

    @property
    def ignorable(self) -> bool:
        return self.config.ignorable

    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def is_interested(self, pod: PodInfo) -> bool:
        """An extender with managedResources only sees pods that request one of them."""
        if not self.config.managed_resources:
            return True
        for container in ((pod.pod.get("spec") or {}).get("containers") or []) + (
                (pod.pod.get("spec") or {}).get("initContainers") or []):
            resources = container.get("resources") or {}
            names = set(resources.get("requests") or {}) | set(resources.get("limits") or {})
            if names & set(self.config.managed_resources):
                return True
        return False

    async def _post(self, verb: str, body: Obj) -> Any:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.config.http_timeout))
        url = f"{self.config.url_prefix}/{verb}"
        try:
            async with self._session.post(url, data=orjson.dumps(body), headers={
                    "Content-Type": "application/json"}) as answer:
                payload = await answer.read()
                if answer.status != 200:
                    raise ExtenderError(f"failed {verb} with extender at URL {url}, code "
                                        f"{answer.status}")
                return orjson.loads(payload)
        except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError) as error:
            raise ExtenderError(f"failed {verb} with extender at URL {url}: {error}") from error

    def _args(self, pod: PodInfo, nodes: list[NodeInfo]) -> Obj:
        if self.config.node_cache_capable:
            return {"pod": pod.pod, "nodenames": [info.name for info in nodes]}
        return {"pod": pod.pod, "nodes": {"items": [info.node for info in nodes]}}

    async def filter(self, pod: PodInfo, nodes: list[NodeInfo]
                     ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]:
        """(nodes that pass, failed node -> reason, unresolvable node -> reason)."""
        if not self.config.filter_verb:
            return nodes, {}, {}
        result = await self._post(self.config.filter_verb, self._args(pod, nodes))
        if result.get("error"):
            raise ExtenderError(result["error"])
        if self.config.node_cache_capable:
            kept = set(result.get("nodenames") or [])
        else:
            kept = {node["metadata"]["name"]
                    for node in (result.get("nodes") or {}).get("items") or []}
        return ([info for info in nodes if info.name in kept],
                dict(result.get("failedNodes") or {}),
                dict(result.get("failedAndUnresolvableNodes") or {}))

    async def prioritize(self, pod: PodInfo, nodes: list[NodeInfo]) -> dict[str, int]:
        """Scores rescaled to the plugins' 0..100 and weighted, as upstream adds them."""
        if not self.config.prioritize_verb:
            return {}
        result = await self._post(self.config.prioritize_verb, self._args(pod, nodes))
        scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
        return {item["host"]: int(item.get("score", 0)) * self.config.weight * scale
                for item in result or []}

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        result = await self._post(self.config.bind_verb, {
            "podName": pod.name, "podNamespace": pod.namespace, "podUID": pod.uid,
            "node": node_name})
        if result.get("error"):
            raise ExtenderError(result["error"])

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
