"""REST handlers: one HTTP request -> one verb on the generic store -> one response.

Upstream's k8s.io/apiserver/pkg/endpoints/handlers (create.go, get.go, update.go,
patch.go, delete.go, watch.go). Every resource goes through the same functions here;
what differs by kind lives in the store's strategies.

    request -> requestinfo (verb, resource, namespace, name, subresource)
            -> decode body (JSON/YAML; patch types) -> fieldValidation
            -> Store verb (strategy hooks, managedFields, etcd Txn)
            -> encode answer (JSON object/list, Table, or watch stream)

Server-side apply (PATCH application/apply-patch+yaml) has its own handler: apply.py.
"""

from __future__ import annotations

import copy
import ssl

from aiohttp import web

from minikube_py.api import Obj, errors
from minikube_py.api.patch import PatchError, apply_patch
from minikube_py.api.resources import CONNECT_SUBRESOURCES, SUBRESOURCE_VERBS, Resource
from minikube_py.api.schema import schema_for
from minikube_py.apiserver.connect.kubeletclient import KubeletClient
from minikube_py.apiserver.connect.podconnect import serve_pod_stream
from minikube_py.apiserver.connect.podlogs import serve_pod_log
from minikube_py.apiserver.connect.proxy import proxy_transport, serve_proxy
from minikube_py.apiserver.endpoints import negotiation, tracing
from minikube_py.apiserver.endpoints.apply import serve_apply
from minikube_py.apiserver.endpoints.negotiation import APPLY_PATCH, Wanted
from minikube_py.apiserver.endpoints.request_params import (
    check_field_labels,
    check_name_and_namespace,
    check_type,
    delete_options,
    dry_run,
    field_manager,
    list_options,
    patch_options,
    read_object,
    store_field_validation,
)
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo
from minikube_py.apiserver.endpoints.responses import (
    from_storage,
    list_body,
    list_json_response,
    no_such_resource,
    raw_list_response,
    render_one,
    respond,
    success_status,
)
from minikube_py.apiserver.endpoints.watch import serve_watch
from minikube_py.apiserver.registry.eviction import evict
from minikube_py.apiserver.registry.store import ListOptions, ListResult, Store
from minikube_py.apiserver.registry.subresources import (
    bind,
    finalize_namespace,
    patch_failed,
    scale,
)
from minikube_py.apiserver.storage.etcd import LIST_SLICE


class ResourceHandler:
    """Serves every verb of every resource listed in the resource table."""

    def __init__(self, stores: dict[tuple[str, str, str], Store],
                 kubelet: KubeletClient | None = None,
                 proxy_tls: ssl.SSLContext | None = None) -> None:
        """`proxy_tls`: how pods/proxy and services/proxy speak to https backends
        (connect/proxy.py's proxy_transport)."""
        self.stores = stores
        self.kubelet = kubelet or KubeletClient()
        self.proxy_tls = proxy_tls or proxy_transport()

    # -- dispatch --------------------------------------------------------------------------

    async def handle(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        store = self.stores.get((info.group, info.version, info.resource))
        if store is None:
            raise no_such_resource(info.group)
        resource = store.resource
        namespace = info.namespace
        if not resource.namespaced and namespace:
            raise no_such_resource()
        if info.subresource and info.subresource not in resource.subresources:
            raise no_such_resource()
        if len(info.parts) > 3 and info.subresource != "proxy":
            raise no_such_resource()
        verb = info.verb
        if verb not in self._allowed_verbs(resource, info.subresource):
            raise errors.method_not_allowed()
        if verb == "create" and info.name and not info.subresource:
            raise errors.method_not_allowed()  # POST goes to the collection, not an object
        if info.subresource == "log":  # answered in text/plain, whatever Accept says
            return await serve_pod_log(store, self.stores[("", "v1", "nodes")], request, info,
                                       namespace, self.kubelet)
        if info.subresource == "proxy":  # HTTP to the pod, Service or node
            return await serve_proxy(self.stores, request, info, namespace, self.kubelet,
                                     self.proxy_tls)
        if info.subresource in CONNECT_SUBRESOURCES:  # a stream to the kubelet
            return await serve_pod_stream(store, self.stores[("", "v1", "nodes")], request,
                                          info, namespace, self.kubelet)
        wanted = negotiation.negotiate(request.headers.get("Accept", ""))
        wanted.trace_context = tracing.wants_trace_context(request)
        if info.subresource == "scale":
            return await scale(request, info, store, namespace, wanted)
        # POST .../bindings is pods/binding reached through its own collection.
        if "binding" in (info.subresource, store.strategy.collection_is_subresource):
            return await bind(self.stores[("", "v1", "pods")], request, info, namespace)
        if info.subresource == "eviction":
            return await evict(store, self.stores[("policy", "v1", "poddisruptionbudgets")],
                               request, info, namespace)
        if info.subresource == "finalize":
            return await self.update(request, info, store, namespace, wanted)
        handler = {
            "get": self.get,
            "list": self.list,
            "watch": serve_watch,
            "create": self.create,
            "update": self.update,
            "patch": self.patch,
            "delete": self.delete,
            "deletecollection": self.delete_collection,
        }[verb]
        return await handler(request, info, store, namespace, wanted)

    @staticmethod
    def _allowed_verbs(resource: Resource, subresource: str) -> tuple[str, ...]:
        if subresource:
            return SUBRESOURCE_VERBS.get(subresource, ())
        return resource.verbs

    # -- read verbs -----------------------------------------------------------------------

    async def get(
        self, request: web.Request, info: RequestInfo, store: Store, namespace: str, wanted: Wanted
    ) -> web.StreamResponse:
        obj = await store.get(
            namespace, info.name, resource_version=request.query.get("resourceVersion", "")
        )
        obj = await from_storage(store, obj)
        return respond(render_one(store, obj, wanted, request), wanted)

    async def list(
        self, request: web.Request, info: RequestInfo, store: Store, namespace: str, wanted: Wanted
    ) -> web.StreamResponse:
        options = list_options(request)
        check_field_labels(store, options)
        plain_json = wanted.form == "object" and not wanted.yaml
        result = await store.list(
            namespace, options, raw=plain_json and store.strategy.stored_is_external
        )
        if result.raw_items is not None:
            return raw_list_response(store.resource, result, wanted)
        result.items = await store.strategy.convert_from_storage(result.items, is_list=True)
        body = list_body(store, result, wanted, request)
        if plain_json and len(result.items) > LIST_SLICE:
            return await list_json_response(body)
        return respond(body, wanted)

    # -- write verbs ----------------------------------------------------------------------

    async def create(
        self, request: web.Request, info: RequestInfo, store: Store, namespace: str, wanted: Wanted
    ) -> web.StreamResponse:
        resource = store.resource
        manager = field_manager(request, "CreateOptions")
        obj = await read_object(request, resource, resource.kind, resource.api_version)
        warnings = store_field_validation(request, store, obj)
        obj = store.strategy.to_internal(obj)
        check_name_and_namespace(obj, name=None, namespace=namespace,
                                 namespaced=resource.namespaced)
        created = await store.create(namespace, obj, dry_run=dry_run(request), manager=manager)
        created = await from_storage(store, created)
        return respond(render_one(store, created, wanted, request), wanted, 201, warnings)

    async def update(
        self, request: web.Request, info: RequestInfo, store: Store, namespace: str, wanted: Wanted
    ) -> web.StreamResponse:
        resource = store.resource
        manager = field_manager(request, "UpdateOptions")
        obj = await read_object(request, resource, resource.kind, resource.api_version)
        warnings = store_field_validation(request, store, obj)
        obj = store.strategy.to_internal(obj)
        check_name_and_namespace(obj, name=info.name, namespace=namespace,
                                 namespaced=resource.namespaced)
        obj["metadata"]["name"] = info.name
        if info.subresource == "eviction":
            return await evict(store, self.stores[("policy", "v1", "poddisruptionbudgets")],
                               request, info, namespace)
        if info.subresource == "finalize":
            updated = await finalize_namespace(store, info.name, obj)
        else:
            updated = await store.update(
                namespace, info.name, obj, subresource=info.subresource, dry_run=dry_run(request),
                manager=manager,
            )
            updated = await from_storage(store, updated)
        return respond(render_one(store, updated, wanted, request), wanted, 200, warnings)

    async def patch(
        self, request: web.Request, info: RequestInfo, store: Store, namespace: str, wanted: Wanted
    ) -> web.StreamResponse:
        resource = store.resource
        kind = negotiation.patch_type(request.headers.get("Content-Type", ""),
                                      store.strategy.patch_types)
        if kind == APPLY_PATCH:
            return await serve_apply(request, info, store, namespace, wanted)
        options = patch_options(request, apply=False)
        body = await request.read()
        patch = negotiation.parse_json(body)
        if kind == "application/json-patch+json":
            if not isinstance(patch, list):
                raise errors.bad_request(
                    "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
                )
        elif not isinstance(patch, dict):
            raise errors.bad_request(
                "json: cannot unmarshal array into Go value of type map[string]interface {}"
            )
        schema = schema_for(resource.group, resource.version, resource.kind)
        warnings: list[str] = []
        async def mutate(stored: Obj) -> Obj:
            current = await from_storage(store, stored)
            original = store.strategy.to_external(current)
            try:
                patched = apply_patch(kind, original, patch, schema)
            except PatchError as err:
                raise patch_failed(err, kind) from None
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch did not produce an object")
            check_type(patched, resource.kind, resource.api_version)
            warnings[:] = store_field_validation(request, store, patched)
            patched = store.strategy.to_internal(patched)
            check_name_and_namespace(patched, name=info.name, namespace=namespace,
                                     namespaced=resource.namespaced, name_required=True)
            wanted_rv = patched["metadata"].get("resourceVersion")
            if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
                raise errors.conflict(
                    resource.plural, resource.group, info.name, errors.OBJECT_MODIFIED
                )
            updated = await store.prepare_update(patched, current, info.subresource,
                                                 dry_run=dry_run(request))
            await store.field_manager.update(current, updated, options.field_manager,
                                             info.subresource)
            return await store.strategy.convert_to_storage(updated)

        if dry_run(request):
            updated = await mutate(copy.deepcopy(await store.get(namespace, info.name)))
        else:
            updated = await store.guaranteed_update(namespace, info.name, mutate)
        updated = await from_storage(store, updated)
        return respond(render_one(store, updated, wanted, request), wanted, 200, warnings)

    async def delete(
        self, request: web.Request, info: RequestInfo, store: Store, namespace: str, wanted: Wanted
    ) -> web.StreamResponse:
        resource = store.resource
        options = await delete_options(request)
        obj, gone = await store.delete(namespace, info.name, options)
        status = 200 if gone else 202
        if store.strategy.return_deleted_object or not gone:
            obj = await from_storage(store, obj)
            return respond(render_one(store, obj, wanted, request), wanted, status)
        # upstream's store writes the resource's plural as the kind, and leaves out the code
        details = {"name": info.name}
        if resource.group:
            details["group"] = resource.group
        details |= {"kind": resource.plural, "uid": obj["metadata"].get("uid", "")}
        return respond(success_status(None, details), wanted, status)

    async def delete_collection(
        self, request: web.Request, info: RequestInfo, store: Store, namespace: str, wanted: Wanted
    ) -> web.StreamResponse:
        options = list_options(request)
        check_field_labels(store, options)
        deleting = await delete_options(request)
        listed = await store.list(
            namespace, ListOptions(options.label_selector, options.field_selector)
        )
        deleted = []
        for obj in listed.items:
            metadata = obj["metadata"]
            try:
                removed, _ = await store.delete(
                    metadata.get("namespace", ""), metadata["name"], deleting
                )
            except errors.APIError as err:
                if err.code == 404:
                    continue
                raise
            deleted.append(removed)
        deleted = await store.strategy.convert_from_storage(deleted, is_list=True)
        result = ListResult(deleted, listed.resource_version)
        return respond(list_body(store, result, wanted, request), wanted)
