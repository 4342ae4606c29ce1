"""Server-side apply: PATCH with `Content-Type: application/apply-patch+yaml`.

Upstream's applyPatcher and patchResource (k8s.io/apiserver/pkg/endpoints/handlers/
patch.go) with the field manager's checks (versionCheckManager, structuredMergeManager).
The body is an *applied configuration*: the fields the manager (`fieldManager`, required)
wants, in YAML or JSON. The merge and the ownership are `api/managedfields`; this module
is the HTTP side:

    PatchOptions (fieldManager, force) -> body as YAML -> it names this kind, carries no
    managedFields -> read the object:
      found:   apply onto it -> name/namespace checks -> the store's update steps -> 200
      missing: apply onto nothing -> the store's create steps -> 201 (not for /status)

A conflict is a 409 whose causes name each contested field (FieldManagerConflict).
"""

from __future__ import annotations

import copy

from aiohttp import web

from minikube_py.api import Obj, errors, meta
from minikube_py.api.managedfields import Conflicts, SchemaError
from minikube_py.api.managedfields.managed import conflict_causes, conflict_message
from minikube_py.apiserver.endpoints.negotiation import Wanted, load_yaml, yaml_duplicate_keys
from minikube_py.apiserver.endpoints.request_params import (
    check_name_and_namespace,
    dry_run,
    field_validation_mode,
    json_type,
    patch_options,
)
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo
from minikube_py.apiserver.endpoints.responses import from_storage, render_one, respond
from minikube_py.apiserver.registry.store import Store


async def serve_apply(
    request: web.Request, info: RequestInfo, store: Store, namespace: str, wanted: Wanted
) -> web.StreamResponse:
    """PATCH apply-patch+yaml: apply the configuration, creating the object if missing."""
    resource = store.resource
    options = patch_options(request, apply=True)
    mode = field_validation_mode(request)
    body = await request.read()
    config = read_configuration(body)
    check_configuration(config, resource.api_version, resource.kind)
    dry = dry_run(request)
    # a key set twice: refused (Strict) or a warning (Warn) once the apply succeeded
    duplicates = yaml_duplicate_keys(body) if mode != "Ignore" else []
    strict_error = ("error converting YAML to JSON: yaml: unmarshal errors:\n  "
                    + "\n  ".join(duplicates)) if duplicates else ""
    warnings = [strict_error] if strict_error and mode == "Warn" else []

    async def applied(live: Obj | None) -> Obj:
        try:
            obj = await store.field_manager.apply(live, config, options.field_manager,
                                                  options.force, info.subresource)
        except Conflicts as conflicts:
            raise errors.APIError(409, "Conflict", conflict_message(conflicts),
                                  {"causes": conflict_causes(conflicts)}) from None
        except SchemaError as err:
            raise errors.bad_request(
                f"failed to create typed patch object ({gvknn(config)}): {err}") from None
        if strict_error and mode == "Strict":
            raise errors.bad_request(f"error strict decoding YAML: {strict_error}")
        check_name(obj, info.name, namespace if resource.namespaced else "")
        return store.strategy.to_internal(obj)

    async def mutate(stored: Obj) -> Obj:
        current = await from_storage(store, stored)
        updated = await applied(store.strategy.to_external(current))
        wanted_rv = meta.metadata(updated).get("resourceVersion")
        if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
            raise errors.conflict(resource.plural, resource.group, info.name,
                                  errors.OBJECT_MODIFIED)
        prepared = await store.prepare_update(updated, current, info.subresource, dry_run=dry)
        return await store.strategy.convert_to_storage(prepared)

    for _ in range(2):  # a create that loses a race applies onto the winner's object
        try:
            if dry:
                updated = await mutate(copy.deepcopy(await store.get(namespace, info.name)))
            else:
                updated = await store.guaranteed_update(namespace, info.name, mutate)
            updated = await from_storage(store, updated)
            return respond(render_one(store, updated, wanted, request), wanted, 200, warnings)
        except errors.APIError as err:
            if err.reason != "NotFound" or info.subresource:
                raise
        obj = await applied(None)
        uid = meta.metadata(obj).get("uid")
        if uid:
            raise errors.conflict(
                resource.plural, resource.group, info.name,
                f"uid mismatch: the provided object specified uid {uid}, and no existing "
                "object was found")
        try:
            created = await store.create(namespace, obj, dry_run=dry)
        except errors.APIError as err:
            if err.reason != "AlreadyExists":
                raise
            continue
        created = await from_storage(store, created)
        return respond(render_one(store, created, wanted, request), wanted, 201, warnings)
    raise errors.conflict(resource.plural, resource.group, info.name, errors.OBJECT_MODIFIED)


def read_configuration(body: bytes) -> Obj:
    """The applied configuration: YAML (JSON is YAML), a map (empty if the body is)."""
    config = load_yaml(body, "error decoding YAML")
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise errors.bad_request(
            f"error decoding YAML: json: cannot unmarshal {json_type(config)} into Go value "
            "of type map[string]interface {}")
    return config


def check_configuration(config: Obj, api_version: str, kind: str) -> None:
    """versionCheckManager and structuredMergeManager: the configuration must name this
    kind at this version, and may not set managedFields."""
    if (config.get("apiVersion"), config.get("kind")) != (api_version, kind):
        raise errors.bad_request(f"invalid object type: {gvk(config)}")
    metadata = config.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise errors.bad_request(
            "json: cannot unmarshal into Go struct field .metadata of type v1.ObjectMeta")
    if (metadata or {}).get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")


def check_name(obj: Obj, name: str, namespace: str) -> None:
    """checkName and EnsureObjectNamespaceMatchesRequestNamespace on the applied object."""
    metadata = meta.metadata(obj)
    if not metadata.get("name"):
        raise errors.bad_request(
            f"the name of the object ({name} based on URL) was undeterminable: name must be "
            "provided")
    check_name_and_namespace(obj, name=name, namespace=namespace, namespaced=bool(namespace),
                             name_required=True)


def gvk(obj: Obj) -> str:
    """A GroupVersionKind as Go prints it: "apps/v1, Kind=Deployment", "/v1, Kind=Pod"."""
    api_version = str(obj.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={obj.get('kind') or ''}"


def gvknn(obj: Obj) -> str:
    """objectGVKNN: "namespace/name; group/version, Kind=kind" of an object."""
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}; {gvk(obj)}"
