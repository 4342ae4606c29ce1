"""Subresources with their own logic: pods/binding, the /scale of workloads, namespaces/finalize
(pods/eviction has a module of its own: eviction.py).

A /scale write is recorded in the workload's managedFields as an update of spec.replicas
through the subresource "scale" (upstream's ScaleHandler); server-side apply of a Scale
itself is not supported (415).

(`/status` needs none: it is an update whose strategy keeps everything but status.)
"""

from __future__ import annotations

import copy

from aiohttp import web

from minikube_py.api import Obj, errors, meta
from minikube_py.api.patch import PatchError, apply_patch
from minikube_py.api.schema import schema_for
from minikube_py.apiserver.endpoints import negotiation
from minikube_py.apiserver.endpoints.negotiation import Wanted
from minikube_py.apiserver.endpoints.request_params import (
    check_name_and_namespace,
    dry_run,
    field_manager,
    field_validation,
    patch_options,
    read_object,
)
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo
from minikube_py.apiserver.endpoints.responses import json_response, respond, success_status
from minikube_py.apiserver.registry.store import Store
from minikube_py.apiserver.registry.strategies.base import Strategy

SCALE_SCHEMA = schema_for("autoscaling", "v1", "Scale")
JSON_PATCH_REJECTED = "the server rejected our request due to an error in our request"


async def bind(
    pods: Store, request: web.Request, info: RequestInfo, namespace: str
) -> web.StreamResponse:
    """pods/binding: set spec.nodeName once (the scheduler's last step).

    Binding body -> its name and namespace match the request -> it names a pod and a
    node -> on the stored pod: preconditions, nodeName, annotations, PodScheduled.
    """
    binding = await read_object(request, pods.resource, "Binding", "v1")
    check_name_and_namespace(binding, name=info.name if info.subresource == "binding" else None,
                             namespace=namespace, namespaced=True)
    metadata = binding["metadata"]
    name = info.name if info.subresource == "binding" else metadata.get("name", "")
    node = binding_target(binding, name)
    await pods.guaranteed_update(
        namespace, name, lambda pod: assign_pod(pod, name, node, metadata), assigned_copy)
    return json_response(success_status(201), 201)


def assigned_copy(stored: Obj) -> Obj:
    """The stored pod's parts assign_pod changes, copied: metadata (annotations and, after
    the write, resourceVersion), spec (nodeName) and status (conditions, a new list). The
    rest, containers and volumes and all, is shared with the watch cache's copy, unchanged:
    deep-copying it was most of a binding's CPU."""
    metadata = dict(stored["metadata"])
    if isinstance(metadata.get("annotations"), dict):
        metadata["annotations"] = dict(metadata["annotations"])
    pod = {**stored, "metadata": metadata}
    for part in ("spec", "status"):
        if isinstance(stored.get(part), dict):
            pod[part] = dict(stored[part])
    return pod


def binding_target(binding: Obj, name: str) -> str:
    """The node a Binding for pod `name` puts it on; 422 Invalid without a pod name, or
    without a target that is a Node."""
    target = binding.get("target") or {}
    node = target.get("name") if isinstance(target, dict) else None
    if not name:
        raise errors.APIError(
            422,
            "Invalid",
            f'Binding "{name}" is invalid: metadata.name: Required value: '
            "name or generateName is required",
            {"name": name, "kind": "Binding"},
        )
    # Upstream's BindingREST returns these as a plain error (a 500 with no reason); we
    # answer 422 Invalid instead, since a 500 should only ever mean a server bug.
    problems = []
    if isinstance(target, dict) and target.get("kind") not in (None, "", "Node"):
        problems.append(
            f'target.kind: Unsupported value: "{target.get("kind")}": '
            'supported values: "Node", "<empty>"'
        )
    if not node:
        problems.append("target.name: Required value")
    if problems:
        summary = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
        raise errors.APIError(
            422,
            "Invalid",
            f'Binding "{name}" is invalid: {summary}',
            {"name": name, "kind": "Binding"},
        )
    return node


def assign_pod(pod: Obj, name: str, node: str, binding_meta: Obj) -> Obj:
    """assignPod on the stored pod: 409 if the Binding's uid is another pod's, or the pod
    is being deleted or already on a node; else its node, the Binding's annotations and
    the PodScheduled=True condition."""
    pod_meta = pod["metadata"]
    uid = binding_meta.get("uid") or ""
    if uid and pod_meta.get("uid") != uid:
        raise errors.conflict(
            "pods/binding",
            "",
            name,
            f"Precondition failed: UID in precondition: {uid}, "
            f"UID in object meta: {pod_meta.get('uid')}",
        )
    if pod_meta.get("deletionTimestamp"):
        raise errors.conflict(
            "pods/binding",
            "",
            name,
            f"pod {name} is being deleted, cannot be assigned to a host",
        )
    current_node = (pod.get("spec") or {}).get("nodeName")
    if current_node:
        raise errors.conflict(
            "pods/binding", "", name, f'pod {name} is already assigned to node "{current_node}"'
        )
    pod["spec"]["nodeName"] = node
    for key, value in (binding_meta.get("annotations") or {}).items():
        pod_meta.setdefault("annotations", {})[key] = value
    status = pod.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": meta.now_rfc3339(),
        }
    )
    status["conditions"] = conditions
    return pod


async def scale(
    request: web.Request, info: RequestInfo, store: Store, namespace: str, wanted: Wanted
) -> web.StreamResponse:
    """The /scale subresource: an autoscaling/v1 Scale view of spec.replicas."""
    resource = store.resource
    if info.verb == "get":
        obj = await store.get(namespace, info.name)
        return respond(to_scale(obj, store.strategy), wanted)
    if info.verb == "update":
        manager = field_manager(request, "UpdateOptions")
        body = await read_object(request, resource, "Scale", "autoscaling/v1")
        warnings = field_validation(request, resource, body, "Scale", "autoscaling", "v1")

        def from_body(_current_scale: Obj) -> Obj:
            return body
    else:
        kind = negotiation.patch_type(request.headers.get("Content-Type", ""),
                                      negotiation.NON_APPLY_PATCH_TYPES)
        manager = patch_options(request, apply=False).field_manager
        patch = negotiation.parse_json(await request.read())
        warnings = []

        def from_body(current_scale: Obj) -> Obj:
            try:
                return apply_patch(kind, current_scale, patch, SCALE_SCHEMA)
            except PatchError as err:
                raise patch_failed(err, kind) from None

    async def mutate(current: Obj) -> Obj:
        scale = from_body(to_scale(current, store.strategy))
        scale_meta = scale.get("metadata") or {}
        wanted_rv = scale_meta.get("resourceVersion")
        if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
            raise errors.conflict(
                resource.plural, resource.group, info.name, errors.OBJECT_MODIFIED
            )
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.APIError(
                422,
                "Invalid",
                f'Scale.autoscaling "{info.name}" is invalid: spec.replicas: Invalid value: '
                f"{replicas}: must be greater than or equal to 0",
                {
                    "name": info.name,
                    "group": "autoscaling",
                    "kind": "Scale",
                    "causes": [
                        {
                            "reason": "FieldValueInvalid",
                            "message": f"Invalid value: {replicas}: must be greater than "
                            "or equal to 0",
                            "field": "spec.replicas",
                        }
                    ],
                },
            )
        new = copy.deepcopy(current)
        store.strategy.set_scale_replicas(new, replicas)
        updated = await store.prepare_update(new, current, "", dry_run=dry_run(request))
        await store.field_manager.update(current, updated, manager, "scale")
        return updated

    if dry_run(request):
        updated = await mutate(copy.deepcopy(await store.get(namespace, info.name)))
    else:
        updated = await store.guaranteed_update(namespace, info.name, mutate)
    return respond(to_scale(updated, store.strategy), wanted, 200,
                   warnings)


async def finalize_namespace(store: Store, name: str, obj: Obj) -> Obj:
    """namespaces/finalize: only spec.finalizers changes (the namespace controller's call)."""
    finalizers = (obj.get("spec") or {}).get("finalizers") or []

    def mutate(current: Obj) -> Obj:
        wanted = obj["metadata"].get("resourceVersion")
        if wanted and wanted != current["metadata"]["resourceVersion"]:
            raise errors.conflict("namespaces", "", name, errors.OBJECT_MODIFIED)
        current.setdefault("spec", {})["finalizers"] = finalizers
        if not finalizers:
            current["spec"].pop("finalizers")
        return current

    return await store.guaranteed_update("", name, mutate)


def patch_failed(err: PatchError, kind: str) -> errors.APIError:
    """A patch that cannot apply: 400 for a malformed document, 422 when it does not fit.

    A JSON patch that does not apply (a failed `test`, an unknown op, a missing path) gets
    upstream's generic 422 (NewGenericServerResponse), which does not say why.
    """
    if err.code == 400:
        return errors.bad_request(str(err))
    if err.code == 413:
        return errors.APIError(413, "RequestEntityTooLarge", str(err))
    if kind == "application/json-patch+json":
        return errors.APIError(422, "Invalid", JSON_PATCH_REJECTED, {})
    return errors.APIError(422, "Invalid", str(err))


def to_scale(obj: Obj, strategy: Strategy) -> Obj:
    """autoscaling/v1 Scale of a workload: its replicas and its selector as a string,
    where the kind's strategy reads them."""
    metadata = obj["metadata"]
    spec_replicas, status_replicas, selector = strategy.scale_of(obj)
    status: Obj = {"replicas": status_replicas}
    if selector is not None:
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: metadata[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in metadata
        },
        "spec": {"replicas": spec_replicas},
        "status": status,
    }
