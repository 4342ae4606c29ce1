"""The aggregation layer: groups that another server serves, behind an APIService.

Upstream's kube-aggregator: an APIService that names a Service (e.g. v1beta1.metrics.k8s.io
-> kube-system/metrics-server) is Available once that server answers its discovery
document; then every request for the group-version is proxied to one of the Service's
endpoints, and discovery (/apis, aggregated or not) lists the group with the resources
the server said it has.

    availability loop (apiservices.py), every 5 s, for each Service-backed APIService
      -> a ready endpoint of the Service's port
      -> GET http://<endpoint>/apis/<group>/<version>    (upstream speaks https; here the
         cluster has no TLS yet, so plain HTTP)
      -> 200 with an APIResourceList: Available=True (Passed), and the group is served
         otherwise: Available=False (FailedDiscoveryCheck), and it is not
      -> once Available, its OpenAPI: /openapi/v3/apis/<group>/<version> and the
         definitions of /openapi/v2, which the API server's own documents then include
         (a server without them stays Available, as upstream's OpenAPI aggregation
         failures do not touch availability)
    /apis/<group>/<version>/...  -> forward() to the endpoint
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from minikube_py.api import Obj
from minikube_py.apiserver.connect.proxy import forward

CHECK_TIMEOUT = 5.0
log = logging.getLogger(__name__)


@dataclass
class Remote:
    """A group-version another server serves: where, and what it said it has."""

    group: str
    version: str
    base: str  # http://address:port
    resources: Obj  # its APIResourceList
    openapi_v3: bytes | None = None  # its /openapi/v3/apis/<group>/<version>
    openapi_v2_definitions: Obj = field(default_factory=dict)

    @property
    def openapi_path(self) -> str:
        return f"apis/{self.group}/{self.version}"


class Aggregator:
    def __init__(self) -> None:
        self.remote: dict[tuple[str, str], Remote] = {}

    def serving(self, group: str, version: str = "") -> Remote | None:
        """The remote that serves the group-version (or the group, any version)."""
        if version:
            return self.remote.get((group, version))
        return next((r for (g, _), r in self.remote.items() if g == group), None)

    async def check(self, api_service: Obj, base: str) -> Obj:
        """The discovery check: the Available condition, and the group served or not."""
        spec = api_service.get("spec") or {}
        group, version = spec.get("group", ""), spec.get("version", "")
        url = f"{base}/apis/{group}/{version}"
        try:
            async with aiohttp.ClientSession(
                    timeout=aiohttp.ClientTimeout(total=CHECK_TIMEOUT)) as session, \
                    session.get(url) as answer:
                body = await answer.json(content_type=None) if answer.status == 200 else None
                status = answer.status
        except (aiohttp.ClientError, TimeoutError, ValueError) as err:
            body, status = None, str(err) or type(err).__name__
        if not isinstance(body, dict) or body.get("kind") != "APIResourceList":
            self.remote.pop((group, version), None)
            return {"type": "Available", "status": "False", "reason": "FailedDiscoveryCheck",
                    "message": f"failing or missing response from {url}: {status}"}
        known = self.remote.get((group, version))
        remote = Remote(group, version, base, body)
        if known is not None and known.base == base and known.openapi_v3 is not None:
            remote.openapi_v3 = known.openapi_v3
            remote.openapi_v2_definitions = known.openapi_v2_definitions
        else:
            await self._fetch_openapi(remote)
        self.remote[(group, version)] = remote
        return {"type": "Available", "status": "True", "reason": "Passed",
                "message": "all checks passed"}

    async def _fetch_openapi(self, remote: Remote) -> None:
        """The remote's v3 document of its group-version and its v2 definitions."""
        try:
            async with aiohttp.ClientSession(
                    timeout=aiohttp.ClientTimeout(total=CHECK_TIMEOUT)) as session:
                async with session.get(
                        f"{remote.base}/openapi/v3/{remote.openapi_path}") as answer:
                    if answer.status == 200:
                        remote.openapi_v3 = await answer.read()
                async with session.get(f"{remote.base}/openapi/v2") as answer:
                    if answer.status == 200:
                        document = await answer.json(content_type=None)
                        remote.openapi_v2_definitions = document.get("definitions") or {}
        except (aiohttp.ClientError, TimeoutError, ValueError, AttributeError) as err:
            log.info("no OpenAPI from %s: %s", remote.base, err)

    def openapi_v3(self, path: str) -> bytes | None:
        """A remote's v3 document, by its path under /openapi/v3/."""
        return next((r.openapi_v3 for r in self.remote.values() if r.openapi_path == path),
                    None)

    def openapi_v3_paths(self) -> Obj:
        """The remotes' entries of the /openapi/v3 index."""
        return {r.openapi_path: {"serverRelativeURL": f"/openapi/v3/{r.openapi_path}?hash="
                                 + hashlib.sha512(r.openapi_v3).hexdigest()[:32].upper()}
                for r in self.remote.values() if r.openapi_v3 is not None}

    def openapi_v2_definitions(self) -> Obj:
        return {name: definition for remote in self.remote.values()
                for name, definition in remote.openapi_v2_definitions.items()}

    def forget(self, api_service: Obj) -> None:
        spec = api_service.get("spec") or {}
        self.remote.pop((spec.get("group", ""), spec.get("version", "")), None)

    async def proxy(self, request: web.Request, remote: Remote) -> web.StreamResponse:
        return await forward(request, remote.base + request.path)

    # -- discovery ------------------------------------------------------------------------

    def api_groups(self) -> list[Obj]:
        """Legacy discovery: an APIGroup per remote group."""
        groups = []
        for remote in sorted(self.remote.values(), key=lambda r: r.group):
            version = {"groupVersion": f"{remote.group}/{remote.version}",
                       "version": remote.version}
            groups.append({"name": remote.group, "versions": [version],
                           "preferredVersion": version})
        return groups

    def aggregated_groups(self) -> list[Obj]:
        """apidiscovery.k8s.io/v2 items, from each remote's APIResourceList."""
        items = []
        for remote in sorted(self.remote.values(), key=lambda r: r.group):
            resources = []
            for entry in remote.resources.get("resources") or []:
                if "/" in entry.get("name", ""):
                    continue  # subresources ride on their resource upstream; none here
                resources.append({
                    "resource": entry["name"],
                    "responseKind": {"group": remote.group, "version": remote.version,
                                     "kind": entry.get("kind", "")},
                    "scope": "Namespaced" if entry.get("namespaced") else "Cluster",
                    "singularResource": entry.get("singularName", ""),
                    "verbs": entry.get("verbs") or []})
            items.append({"metadata": {"name": remote.group}, "versions": [{
                "version": remote.version, "resources": resources, "freshness": "Current"}]})
        return items
