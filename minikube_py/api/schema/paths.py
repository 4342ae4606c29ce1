"""The `paths` of an OpenAPI v3 document: the operations served for each resource.

Each operation carries x-kubernetes-group-version-kind and x-kubernetes-action as upstream's
do. Clients read them: `kubectl explain` finds the kind of a resource from its collection
or object path, and `kubectl apply` validates on the server (fieldValidation=Strict) only
if the kind's PATCH operation lists a `fieldValidation` parameter
(k8s.io/cli-runtime/pkg/resource/query_param_verifier_v3.go).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minikube_py.api.resources import (
    CONNECT_SUBRESOURCES,
    SUBRESOURCE_KINDS,
    SUBRESOURCE_VERBS,
    Resource,
)
from minikube_py.api.schema.meta import DELETE_OPTIONS, PATCH, STATUS
from minikube_py.api.schema.registry import KINDS, GroupVersionKind
from minikube_py.api.schema.types import Type

REF_V3 = "#/components/schemas/"

_STRING = {"type": "string", "uniqueItems": True}
_INTEGER = {"type": "integer", "uniqueItems": True}
_BOOLEAN = {"type": "boolean", "uniqueItems": True}

_QUERY_PARAMETERS: dict[str, tuple[dict, str]] = {
    "pretty": (_STRING, "If 'true', the output is pretty printed."),
    "allowWatchBookmarks": (_BOOLEAN, "Ask for BOOKMARK events in a watch."),
    "continue": (_STRING, "Token from a previous chunk of a limited list."),
    "dryRun": (_STRING, "All: run every stage of the request but do not persist it."),
    "fieldManager": (_STRING, "Name of the actor making the change, for managedFields."),
    "fieldSelector": (_STRING, "Select objects by fields, e.g. metadata.name=x."),
    "fieldValidation": (_STRING, "Ignore, Warn or Strict: what to do with unknown or "
                        "duplicate fields in the body. Strict rejects them with 400."),
    "force": (_BOOLEAN, "Apply requests only: take over fields owned by other managers."),
    "gracePeriodSeconds": (_INTEGER, "Seconds before the object is deleted; 0 deletes now."),
    "labelSelector": (_STRING, "Select objects by labels, e.g. app=web,tier!=db."),
    "limit": (_INTEGER, "Maximum number of items of a list chunk."),
    "orphanDependents": (_BOOLEAN, "Deprecated: use propagationPolicy."),
    "propagationPolicy": (_STRING, "Orphan, Background or Foreground."),
    "resourceVersion": (_STRING, "Which version of the data the request may be served from."),
    "resourceVersionMatch": (_STRING, "Exact or NotOlderThan: how resourceVersion applies."),
    "sendInitialEvents": (_BOOLEAN, "Start a watch with the current objects as ADDED events."),
    "timeoutSeconds": (_INTEGER, "Timeout of the list or watch call."),
    "watch": (_BOOLEAN, "Stream changes instead of listing."),
}

_LIST = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
         "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds",
         "watch")
_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_DELETE = ("dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy")
_DELETE_COLLECTION = (*_DELETE, "continue", "fieldSelector", "labelSelector", "limit",
                      "resourceVersion", "resourceVersionMatch", "sendInitialEvents",
                      "timeoutSeconds")

_PATCH_CONTENT_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


@dataclass(frozen=True)
class _Operation:
    """How one verb is served over HTTP."""

    method: str  # get, post, put, patch, delete
    action: str  # x-kubernetes-action
    verb: str  # first word of the operationId
    summary: str  # description; {kind} and {target} are filled in
    parameters: tuple[str, ...]  # query parameters
    body: str  # request body: "object", "patch", "delete" or ""
    codes: tuple[str, ...]  # success status codes


_CODES = {"200": "OK", "201": "Created", "202": "Accepted"}
_CREATE = _Operation("post", "post", "create", "create {target}", _WRITE, "object",
                     ("200", "201", "202"))
# Verbs on the collection path (.../deployments) and on an object path (.../{name}).
_COLLECTION_OPERATIONS = {
    "list": _Operation("get", "list", "list", "list objects of kind {kind}", _LIST, "",
                       ("200",)),
    "create": _CREATE,
    "deletecollection": _Operation("delete", "deletecollection", "deleteCollection",
                                   "delete collection of {kind}", _DELETE_COLLECTION,
                                   "delete", ("200",)),
}
_OBJECT_OPERATIONS = {
    "get": _Operation("get", "get", "read", "read {target}", (), "", ("200",)),
    "update": _Operation("put", "put", "replace", "replace {target}", _WRITE, "object",
                         ("200", "201")),
    "patch": _Operation("patch", "patch", "patch", "partially update {target}",
                        (*_WRITE, "force"), "patch", ("200", "201")),
    "delete": _Operation("delete", "delete", "delete", "delete {target}", _DELETE, "delete",
                         ("200", "202")),
}
# pods/{name}/binding is created (POST) on the subresource path.
_SUBRESOURCE_OPERATIONS = {**_OBJECT_OPERATIONS, "create": _CREATE}


def _group_id(group: str) -> str:
    """The group as upstream spells it in operation IDs: Core, Apps, RbacAuthorization."""
    name = group.removesuffix(".k8s.io") or "core"
    return "".join(part[:1].upper() + part[1:] for part in name.split("."))


def _parameter(name: str) -> dict:
    schema, description = _QUERY_PARAMETERS[name]
    return {"description": description, "in": "query", "name": name, "schema": schema}


def _path_parameter(name: str, description: str) -> dict:
    return {"description": description, "in": "path", "name": name, "required": True,
            "schema": _STRING}


def _ref(schema: Type) -> dict:
    return {"$ref": REF_V3 + schema.name}


def _render_operation(operation: _Operation, resource: Resource, subresource: str,
                      gvk: GroupVersionKind) -> dict:
    """One operation, e.g. PATCH .../deployments/{name}/scale."""
    kind = KINDS[gvk]
    if operation.action == "list":
        response = KINDS[(gvk[0], gvk[1], gvk[2] + "List")]
    elif operation.body == "delete":
        response = STATUS
    else:
        response = kind
    group_id = _group_id(resource.group)
    scope = "Namespaced" if resource.namespaced else ""
    target = f"{subresource} of a {resource.kind}" if subresource else f"a {resource.kind}"
    out: dict[str, Any] = {
        "description": operation.summary.format(kind=resource.kind, target=target),
        "operationId": (f"{operation.verb}{group_id}{resource.version.capitalize()}{scope}"
                        f"{resource.kind}{subresource.capitalize()}"),
    }
    if operation.parameters:
        out["parameters"] = [_parameter(name) for name in operation.parameters]
    if operation.body == "object":
        out["requestBody"] = {"content": {"*/*": {"schema": _ref(kind)}}, "required": True}
    elif operation.body == "patch":
        out["requestBody"] = {
            "content": {media: {"schema": _ref(PATCH)} for media in _PATCH_CONTENT_TYPES},
            "required": True,
        }
    elif operation.body == "delete":
        out["requestBody"] = {"content": {"*/*": {"schema": _ref(DELETE_OPTIONS)}}}
    content = {media: {"schema": _ref(response)}
               for media in ("application/json", "application/yaml")}
    out["responses"] = {code: {"content": content, "description": _CODES[code]}
                        for code in operation.codes}
    out["responses"]["401"] = {"description": "Unauthorized"}
    out["tags"] = [f"{group_id[:1].lower()}{group_id[1:]}_{resource.version}"]
    out["x-kubernetes-action"] = operation.action
    out["x-kubernetes-group-version-kind"] = {"group": gvk[0], "kind": gvk[2],
                                              "version": gvk[1]}
    return out


def resource_paths(resource: Resource) -> dict[str, dict]:
    """The paths of one resource: its collection, its objects and their subresources."""
    prefix = (f"/apis/{resource.group}/{resource.version}" if resource.group
              else f"/api/{resource.version}")
    scope = "/namespaces/{namespace}" if resource.namespaced else ""
    collection = f"{prefix}{scope}/{resource.plural}"
    gvk = (resource.group, resource.version, resource.kind)
    common = [_parameter("pretty")]
    if resource.namespaced:
        common.insert(0, _path_parameter("namespace", "Namespace of the objects."))
    named = [_path_parameter("name", f"Name of the {resource.kind}."), *common]

    def path_item(parameters: list[dict], operations: dict[str, _Operation],
                  verbs: tuple[str, ...], subresource: str, kind: GroupVersionKind) -> dict:
        item: dict[str, Any] = {"parameters": parameters}
        for verb in verbs:
            if verb in operations:
                operation = operations[verb]
                item[operation.method] = _render_operation(operation, resource, subresource,
                                                           kind)
        return item

    paths = {
        collection: path_item(common, _COLLECTION_OPERATIONS, resource.verbs, "", gvk),
        f"{collection}/{{name}}": path_item(named, _OBJECT_OPERATIONS, resource.verbs, "",
                                            gvk),
    }
    for subresource in resource.subresources:
        if subresource in CONNECT_SUBRESOURCES:
            continue
        paths[f"{collection}/{{name}}/{subresource}"] = path_item(
            named, _SUBRESOURCE_OPERATIONS, SUBRESOURCE_VERBS[subresource], subresource,
            SUBRESOURCE_KINDS.get(subresource, gvk))
    # A path without operations (bindings have no object path) is left out.
    return {path: item for path, item in paths.items() if len(item) > 1}
