"""Parse a request path into what it asks for (upstream's RequestInfoFactory).

    /api/v1/namespaces/default/pods/web/status
     |    |            |       |    |   +-- subresource
     |    |            |       |    +------ name
     |    |            |       +----------- resource
     |    |            +------------------- namespace
     |    +-------------------------------- version (group "" for /api)
     +------------------------------------- prefix: /api (core group) or /apis/<group>

`namespaces/<name>` (and its /status and /finalize) is a request on the Namespace
object itself, a cluster-scoped resource: `namespace` holds only the scope of a
namespaced resource. (Upstream's RequestInfo also puts that name in Namespace, for
authorization, which does not look at it here.)

The verb follows from the HTTP method and whether a name is present: GET with a name is
`get`, without one `list` (or `watch` with ?watch=true), DELETE without a name is
`deletecollection`.
"""

from __future__ import annotations

from dataclasses import dataclass

# Subresources of a namespace, which must not be read as a resource inside it.
NAMESPACE_SUBRESOURCES = {"status", "finalize"}


@dataclass
class RequestInfo:
    is_resource_request: bool
    path: str
    verb: str = ""
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    parts: tuple[str, ...] = ()


def parse_request_info(method: str, path: str, watch_param: str | None,
                       field_selector: str | None = None) -> RequestInfo:
    segments = [s for s in path.strip("/").split("/") if s]
    info = RequestInfo(False, path)
    if not segments or segments[0] not in ("api", "apis"):
        return info
    if segments[0] == "api":
        if len(segments) < 2:
            return info
        info.version = segments[1]
        rest = segments[2:]
    else:
        if len(segments) < 3:
            return info
        info.group, info.version = segments[1], segments[2]
        rest = segments[3:]
    if not rest:
        return info
    info.is_resource_request = True

    watching = watch_param is not None and watch_param.lower() in ("1", "true")
    if rest[0] == "watch":
        # The deprecated /api/v1/watch/... form.
        watching = True
        rest = rest[1:]
    if len(rest) > 2 and rest[0] == "namespaces" and rest[2] not in NAMESPACE_SUBRESOURCES:
        info.namespace = rest[1]
        rest = rest[2:]
    info.parts = tuple(rest)
    if rest:
        info.resource = rest[0]
    if len(rest) > 1:
        info.name = rest[1]
    if len(rest) > 2:
        info.subresource = rest[2]

    method = method.upper()
    if method == "GET" or method == "HEAD":
        info.verb = "get" if info.name else ("watch" if watching else "list")
        if watching and info.name:
            info.verb = "watch"
    elif method == "POST":
        info.verb = "create"
    elif method == "PUT":
        info.verb = "update"
    elif method == "PATCH":
        info.verb = "patch"
    elif method == "DELETE":
        info.verb = "delete" if info.name else "deletecollection"
    else:
        info.verb = method.lower()
    if info.verb in ("list", "watch") and not info.name and field_selector:
        # A list or watch of one object by name (fieldSelector=metadata.name=x) names it,
        # so that an authorizer may allow it as it would a get (the kubelet's watches of
        # the Secrets and ConfigMaps its pods use).
        info.name = _exact_name(field_selector)
    return info


def _exact_name(field_selector: str) -> str:
    """The name `metadata.name=x` (or `==x`) requires, when the selector requires one."""
    for term in field_selector.split(","):
        key, operator, value = term.partition("==") if "==" in term else term.partition("=")
        if key.strip() == "metadata.name" and operator and not key.endswith("!"):
            value = value.strip()
            if value and "/" not in value and value not in (".", ".."):
                return value
    return ""
