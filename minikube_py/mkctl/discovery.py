"""What resources the server has, and which one a name on the command line means
(client-go's discovery, its disk cache, and restmapper).

Discovery: two requests, `GET /api` and `GET /apis`, asking for the aggregated form
(apidiscovery.k8s.io/v2: every group, version and resource at once); a server without it
is asked group-version by group-version. The result is cached on disk for six hours, as
kubectl caches it (its own files under ~/.kube/cache/discovery/<host>_<port>/, ours under
~/.kube/cache/mkctl/discovery/<host>_<port>/): a warm `mkctl get pods` makes one request.
A name the cached data does not know makes mkctl refetch once before giving up, as
kubectl does, so a resource created since (a CRD) is found.

Resolution (RESTMapper), for an argument such as `po`, `pods`, `Pod`, `deploy.apps`,
`deployments.v1.apps`:
1. `resource.version.group` and `resource.group` forms are split off;
2. a short name (`po`, `deploy`) is expanded, unless the text is some resource's plural or
   singular name; when two groups share a short name the first wins, with kubectl's
   warning;
3. the resource is matched by plural, singular or kind, case-insensitively; when several
   groups have it (events, events.events.k8s.io) the first in discovery order wins:
   the core group, then the groups in the order the server lists them, each group's
   preferred version first.
Categories (`all`) expand to every resource that lists them, in the same order.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from minikube_py.mkctl.errors import ConnectionFailed, NoResourceMatch
from minikube_py.mkctl.transport import RESTClient, status_error, timeout_param

AGGREGATED_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                     "application/json;g=apidiscovery.k8s.io;v=v2beta1;"
                     "as=APIGroupDiscoveryList,application/json")
CACHE_TTL_SECONDS = 6 * 60 * 60  # kubectl's discovery cache lifetime
CACHE_FORMAT = 1
_UNSAFE_FILE_CHARACTERS = re.compile(r"[^(\w/.)]")


class APIResource(NamedTuple):
    """metav1.APIResource of one top-level resource, with its group and version."""

    name: str
    singular_name: str
    namespaced: bool
    group: str
    version: str
    kind: str
    verbs: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_kind(self) -> str:
        """schema.GroupKind.String(): "Pod", "Deployment.apps"."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def group_resource(self) -> str:
        """schema.GroupResource.String(): "pods", "deployments.apps"."""
        return f"{self.name}.{self.group}" if self.group else self.name

    def path(self, namespace: str = "", name: str = "") -> str:
        """The REST path of the collection, or of one object when `name` is given."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            prefix += f"/namespaces/{namespace}"
        prefix += f"/{self.name}"
        return f"{prefix}/{name}" if name else prefix


class Groups:
    """Everything discovery found, in the server's order (the RESTMapper's priority)."""

    def __init__(self, resources: list[APIResource]) -> None:
        self.resources = resources

    def to_json(self) -> dict[str, Any]:
        return {"format": CACHE_FORMAT, "resources": [r._asdict() for r in self.resources]}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Groups:
        if document.get("format") != CACHE_FORMAT:
            raise ValueError("another cache format")
        return cls([APIResource(**{**item, **{key: tuple(item[key]) for key in (
            "verbs", "short_names", "categories")}}) for item in document["resources"]])


def cache_directory(cache_root: str, host: str) -> Path:
    """computeDiscoverCacheDir: one directory per server, named after its host and port."""
    bare = host.replace("https://", "", 1).replace("http://", "", 1)
    return Path(cache_root) / "mkctl" / "discovery" / _UNSAFE_FILE_CHARACTERS.sub("_", bare)


class Discovery:
    """The server's resources: from the disk cache while it is fresh, else fetched (and
    the cache rewritten)."""

    def __init__(self, client: RESTClient, cache_dir: Path | None) -> None:
        self.client = client
        self.cache_file = cache_dir / "resources.json" if cache_dir else None
        self.fetched = False  # whether this process asked the server (CachedDiscovery.Fresh)
        self._groups: Groups | None = None

    def groups(self) -> Groups:
        if self._groups is None:
            self._groups = self._read_cache()
        if self._groups is None:
            self._groups = self._fetch()
        return self._groups

    def invalidate(self) -> None:
        """Forget what is cached: the next question asks the server again."""
        self._groups = None
        if self.cache_file is not None:
            try:
                self.cache_file.unlink()
            except OSError:
                pass

    def _read_cache(self) -> Groups | None:
        if self.cache_file is None:
            return None
        try:
            if time.time() - self.cache_file.stat().st_mtime > CACHE_TTL_SECONDS:
                return None
            return Groups.from_json(json.loads(self.cache_file.read_bytes()))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write_cache(self, groups: Groups) -> None:
        if self.cache_file is None:
            return
        # best effort: a cache we cannot write only costs the next command two requests
        with contextlib.suppress(OSError):
            self.cache_file.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
            temporary = self.cache_file.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(groups.to_json()))
            os.chmod(temporary, 0o660)
            temporary.replace(self.cache_file)

    def _fetch(self) -> Groups:
        params = {"timeout": timeout_param(self.client.config)}
        try:
            core = self.client.get("/api", params, accept=AGGREGATED_ACCEPT)
            if core.status != 200:
                raise status_error(core)
            named = self.client.get("/apis", params, accept=AGGREGATED_ACCEPT)
            if named.status != 200:
                raise status_error(named)
        except ConnectionFailed as error:
            error.during_discovery = True
            raise
        documents = [core.json(), named.json()]
        if all(document.get("kind") == "APIGroupDiscoveryList" for document in documents):
            groups = Groups([resource for document in documents
                             for resource in _aggregated_resources(document)])
        else:
            groups = self._fetch_per_group_version(documents[0], documents[1], params)
        self.fetched = True
        self._write_cache(groups)
        return groups

    def _fetch_per_group_version(self, core: dict[str, Any], named: dict[str, Any],
                                 params: dict[str, str]) -> Groups:
        """The legacy discovery: APIVersions, APIGroupList, then one APIResourceList per
        group version, preferred versions first."""
        versions = [("", version) for version in core.get("versions") or []]
        for group in named.get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("version", "")
            ordered = sorted(group.get("versions") or [],
                             key=lambda entry: entry.get("version") != preferred)
            versions += [(group.get("name", ""), entry.get("version", "")) for entry in ordered]
        resources = []
        for group, version in versions:
            path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            listing = self.client.get_json(path, params)
            for item in listing.get("resources") or []:
                if "/" in item.get("name", ""):
                    continue
                resources.append(APIResource(
                    item["name"], item.get("singularName") or item.get("kind", "").lower(),
                    bool(item.get("namespaced")), group, version, item.get("kind", ""),
                    tuple(item.get("verbs") or ()), tuple(item.get("shortNames") or ()),
                    tuple(item.get("categories") or ())))
        return Groups(resources)


def _aggregated_resources(document: dict[str, Any]) -> list[APIResource]:
    resources = []
    for group in document.get("items") or []:
        name = (group.get("metadata") or {}).get("name", "")
        for version in group.get("versions") or []:
            for item in version.get("resources") or []:
                kind = (item.get("responseKind") or {}).get("kind", "")
                resources.append(APIResource(
                    item["resource"], item.get("singularResource") or kind.lower(),
                    item.get("scope") == "Namespaced", name, version.get("version", ""), kind,
                    tuple(item.get("verbs") or ()), tuple(item.get("shortNames") or ()),
                    tuple(item.get("categories") or ())))
    return resources


# -- resolution ------------------------------------------------------------------------------

class _Arg(NamedTuple):
    """An argument split as schema.ParseResourceArg splits it."""

    resource: str
    group: str
    version: str = ""


def _parse_resource_arg(arg: str) -> tuple[_Arg | None, _Arg]:
    """ParseResourceArg: `r.v.g` is also read as resource r of group `v.g`."""
    fully = None
    if arg.count(".") >= 2:
        resource, version, group = arg.split(".", 2)
        fully = _Arg(resource, group, version)
    resource, _, group = arg.partition(".")
    return fully, _Arg(resource, group)


class RESTMapper:
    """Resource arguments to APIResources, over what discovery returned."""

    def __init__(self, discovery: Discovery, warn: Callable[[str], None]) -> None:
        self.discovery = discovery
        self.warn = warn

    def resource_for(self, arg: str) -> APIResource:
        """The resource an argument names; refetches discovery once when the cached data
        does not know it, as kubectl's DeferredDiscoveryRESTMapper does."""
        try:
            return self._resource_for(arg)
        except NoResourceMatch:
            if self.discovery.fetched:
                raise
            self.discovery.invalidate()
            return self._resource_for(arg)

    def _resource_for(self, arg: str) -> APIResource:
        fully, partial = _parse_resource_arg(arg)
        resources = self.discovery.groups().resources
        for candidate in (fully, partial):
            if candidate is None:
                continue
            expanded = self._expand_shortcut(candidate, resources)
            found = _match(expanded, resources)
            if found is not None:
                return found
        raise NoResourceMatch(partial.resource, partial.group)

    def _expand_shortcut(self, arg: _Arg, resources: list[APIResource]) -> _Arg:
        """shortcutExpander.expandResourceShortcut."""
        for resource in resources:
            if (not arg.group or arg.group == resource.group) and arg.resource in (
                    resource.name, resource.singular_name):
                return arg
        found: APIResource | None = None
        warned: set[str] = set()
        for resource in resources:
            if arg.group and arg.group != resource.group:
                continue
            if arg.resource not in resource.short_names:
                continue
            if found is None:
                found = resource
            elif (resource.group, resource.name) != (found.group, found.name) and (
                    resource.group_resource not in warned):
                self.warn(f'short name "{arg.resource}" could also match lower priority '
                          f"resource {resource.group_resource}")
                warned.add(resource.group_resource)
        if found is not None:
            return _Arg(found.name, found.group, arg.version)
        if arg.group:
            for resource in resources:
                if resource.group.startswith(arg.group) and arg.resource in resource.short_names:
                    return _Arg(resource.name, resource.group, arg.version)
        return arg

    def resource_for_kind(self, group: str, version: str, kind: str) -> APIResource:
        """The resource of an object's apiVersion and kind (RESTMapping), refetching
        discovery once when the cached data does not know it."""
        for attempt in range(2):
            for resource in self.discovery.groups().resources:
                if (resource.group, resource.version, resource.kind) == (group, version, kind):
                    return resource
            if attempt == 0 and not self.discovery.fetched:
                self.discovery.invalidate()
            else:
                break
        raise NoResourceMatch(kind, group, version)

    def expand_category(self, name: str) -> list[str] | None:
        """The resources (`pods`, `deployments.apps`, ...) of a category, or None."""
        seen: list[str] = []
        for resource in self.discovery.groups().resources:
            if name in resource.categories and resource.group_resource not in seen:
                seen.append(resource.group_resource)
        return seen or None


def _match(arg: _Arg, resources: list[APIResource]) -> APIResource | None:
    """The first resource (in priority order) whose plural, singular or kind the argument
    names, case-insensitively, in the group and version it gives."""
    wanted = arg.resource.lower()
    for resource in resources:
        if arg.group and arg.group != resource.group:
            continue
        if arg.version and arg.version != resource.version:
            continue
        if wanted in (resource.name, resource.singular_name, resource.kind.lower()):
            return resource
    return None
