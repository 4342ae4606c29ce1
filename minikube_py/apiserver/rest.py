"""REST handlers: one HTTP request -> one verb on the generic store -> one response.

Upstream's k8s.io/apiserver/pkg/endpoints/handlers (create.go, get.go, update.go,
patch.go, delete.go, watch.go). Every resource goes through the same functions here;
what differs by kind lives in the store's strategies.

    request -> requestinfo (verb, resource, namespace, name, subresource)
            -> decode body (JSON/YAML; patch types) -> fieldValidation
            -> Store verb (strategy hooks, etcd Txn)
            -> encode answer (JSON object/list, Table, or watch stream)
"""

from __future__ import annotations

import asyncio
import copy
import random
import time
from collections.abc import Callable
from typing import Any

import orjson
import yaml
from aiohttp import web

from minikube_py.api import errors, meta
from minikube_py.api.patch import (
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from minikube_py.api.resources import Resource, by_kind
from minikube_py.api.schema import schema_for, unknown_fields
from minikube_py.api.selectors import (
    SelectorError,
    label_selector_to_string,
    parse_field_selector,
    parse_label_selector,
)
from minikube_py.apiserver import conversion, negotiation, printers
from minikube_py.apiserver.negotiation import Wanted
from minikube_py.apiserver.requestinfo import RequestInfo
from minikube_py.apiserver.store import DeleteOptions, ListOptions, ListResult, Store
from minikube_py.apiserver.watchcache import BOOKMARK, ERROR, CacheEvent, Watcher

Obj = dict[str, Any]

MIN_REQUEST_TIMEOUT = 1800  # upstream --min-request-timeout: watches last 1-2x this
BOOKMARK_INTERVAL = 30.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
JSON_PATCH_REJECTED = "the server rejected our request due to an error in our request"


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=headers
    )


def no_such_resource() -> errors.APIError:
    return errors.APIError(
        404, "NotFound", "the server could not find the requested resource", {}
    )


def respond(body: Any, wanted: Wanted, status: int = 200, warnings: list[str] | None = None
            ) -> web.Response:
    headers = {}
    if warnings:
        headers["Warning"] = ", ".join(
            '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"' for w in warnings
        )
    if wanted.yaml:
        return web.Response(
            text=yaml.safe_dump(body, sort_keys=False), status=status,
            content_type="application/yaml", headers=headers,
        )
    return json_response(body, status, headers)


def success_status(code: int, details: dict[str, Any] | None = None) -> Obj:
    status: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        status["details"] = details
    status["code"] = code
    return status


def query_int(request: web.Request, name: str) -> int | None:
    value = request.query.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise errors.bad_request(f"invalid value for {name}: {value!r}") from None


class ResourceHandler:
    """Serves every verb of every resource listed in the resource table."""

    def __init__(self, stores: dict[tuple[str, str, str], Store]) -> None:
        self.stores = stores

    # -- dispatch --------------------------------------------------------------------------

    async def handle(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        store = self.stores.get((info.group, info.version, info.resource))
        if store is None:
            raise no_such_resource()
        resource = store.resource
        namespace = info.namespace
        if resource.plural == "namespaces":
            namespace = ""
        elif not resource.namespaced and namespace:
            raise no_such_resource()
        if info.subresource and info.subresource not in resource.subresources:
            raise no_such_resource()
        if len(info.parts) > 3:
            raise no_such_resource()
        verb = info.verb
        if verb not in self._allowed_verbs(resource, info.subresource):
            raise errors.method_not_allowed()
        if verb == "create" and info.name and not info.subresource:
            raise errors.method_not_allowed()  # POST goes to the collection, not an object
        wanted = negotiation.negotiate(request.headers.get("Accept", ""))
        if info.subresource == "scale":
            return await self.scale(request, info, store, namespace, wanted)
        if info.subresource == "binding" or resource.plural == "bindings":
            return await self.bind(request, info, namespace)
        if info.subresource == "finalize":
            return await self.update(request, info, store, namespace, wanted)
        handler = {
            "get": self.get,
            "list": self.list,
            "watch": self.watch,
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
            return {
                "status": ("get", "patch", "update"),
                "scale": ("get", "patch", "update"),
                "binding": ("create",),
                "finalize": ("update",),
            }.get(subresource, ())
        verbs = resource.verbs
        if "watch" in verbs:
            verbs = verbs + ("watch",)
        return verbs

    # -- shaping answers ------------------------------------------------------------------

    def _external(self, resource: Resource, obj: Obj) -> Obj:
        """The object as this resource's clients see it (events.k8s.io converts)."""
        if resource.group == "events.k8s.io":
            return conversion.core_event_to_events_v1(obj)
        return obj

    def _render_one(self, resource: Resource, obj: Obj, wanted: Wanted, request: web.Request
                    ) -> Obj:
        obj = self._external(resource, obj)
        if wanted.form == "Table":
            return printers.to_table(
                resource, [obj], now=meta.now(),
                include_object=request.query.get("includeObject", "Metadata"),
                list_metadata={"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            )
        if wanted.form == "PartialObjectMetadata":
            return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj.get("metadata", {})}
        return obj

    # -- read verbs -----------------------------------------------------------------------

    async def get(self, request: web.Request, info: RequestInfo, store: Store, namespace: str,
                  wanted: Wanted) -> web.StreamResponse:
        obj = await store.get(namespace, info.name,
                              resource_version=request.query.get("resourceVersion", ""))
        return respond(self._render_one(store.resource, obj, wanted, request), wanted)

    def _list_options(self, request: web.Request) -> ListOptions:
        try:
            labels = parse_label_selector(request.query.get("labelSelector", ""))
        except SelectorError as err:
            raise errors.bad_request(f"unable to parse requirement: {err}") from None
        try:
            fields = parse_field_selector(request.query.get("fieldSelector", ""))
        except SelectorError as err:
            raise errors.bad_request(str(err)) from None
        limit = query_int(request, "limit") or 0
        if limit < 0:
            raise errors.bad_request(f"limit must be non-negative, got {limit}")
        resource_version = request.query.get("resourceVersion", "")
        if resource_version not in ("", "0"):
            try:
                if int(resource_version) < 0:
                    raise ValueError
            except ValueError:
                raise errors.bad_request(
                    f"invalid resource version: {resource_version!r}") from None
        match = request.query.get("resourceVersionMatch", "")
        if match and match not in ("Exact", "NotOlderThan"):
            raise errors.bad_request(f"unsupported resourceVersionMatch: {match!r}")
        send_initial = request.query.get("sendInitialEvents", "").lower() in ("1", "true")
        if match and resource_version == "" and not send_initial:
            raise errors.bad_request(
                "resourceVersionMatch is forbidden unless resourceVersion is provided")
        return ListOptions(labels, fields, limit, request.query.get("continue", ""),
                           resource_version, match)

    def _check_field_labels(self, store: Store, options: ListOptions) -> None:
        supported = store.strategy.field_set({"metadata": {}, "spec": {}, "status": {}})
        for name in sorted(options.field_selector.fields()):
            if name not in supported:
                raise errors.bad_request(
                    f'field label not supported: {name}'
                )

    def _filter(self, store: Store, namespace: str, options: ListOptions
                ) -> Callable[[Obj], bool] | None:
        labels, fields = options.label_selector, options.field_selector
        if not namespace and labels.empty() and fields.empty():
            return None

        def matches(obj: Obj) -> bool:
            if namespace and obj.get("metadata", {}).get("namespace") != namespace:
                return False
            if not labels.empty() and not labels.matches(meta.labels_of(obj)):
                return False
            return fields.empty() or fields.matches(store.strategy.field_set(obj))

        return matches

    async def list(self, request: web.Request, info: RequestInfo, store: Store, namespace: str,
                   wanted: Wanted) -> web.StreamResponse:
        options = self._list_options(request)
        self._check_field_labels(store, options)
        result = await store.list(namespace, options)
        return respond(self._list_body(store.resource, result, wanted, request), wanted)

    def _list_body(self, resource: Resource, result: ListResult, wanted: Wanted,
                   request: web.Request) -> Obj:
        list_meta: Obj = {"resourceVersion": str(result.resource_version)}
        if result.continue_token:
            list_meta["continue"] = result.continue_token
        if result.remaining_item_count is not None:
            list_meta["remainingItemCount"] = result.remaining_item_count
        items = result.items
        if resource.group == "events.k8s.io":
            items = [self._external(resource, o) for o in items]
        if wanted.form == "Table":
            return printers.to_table(resource, items, now=meta.now(),
                                     include_object=request.query.get("includeObject", "Metadata"),
                                     list_metadata=list_meta)
        if wanted.form == "PartialObjectMetadata":
            return {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                    "metadata": list_meta,
                    "items": [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                               "metadata": o.get("metadata", {})} for o in items]}
        return {"kind": resource.list_kind, "apiVersion": resource.api_version,
                "metadata": list_meta, "items": items}

    # -- watch ----------------------------------------------------------------------------

    async def watch(self, request: web.Request, info: RequestInfo, store: Store, namespace: str,
                    wanted: Wanted) -> web.StreamResponse:
        """Watch: a chunked stream of {"type", "object"} lines from the watch cache."""
        options = self._list_options(request)
        self._check_field_labels(store, options)
        matches = self._filter(store, namespace, options)
        if info.name:
            name = info.name
            inner = matches

            def matches(obj: Obj) -> bool:
                return obj["metadata"].get("name") == name and (inner is None or inner(obj))

        timeout = query_int(request, "timeoutSeconds")
        if timeout is None or timeout <= 0:
            timeout = int(MIN_REQUEST_TIMEOUT * (1 + random.random()))
        bookmarks = request.query.get("allowWatchBookmarks", "").lower() in ("1", "true")
        send_initial = request.query.get("sendInitialEvents", "").lower() in ("1", "true")
        version = options.resource_version
        cache = store.cache
        ns_prefix = f"{namespace}/" if namespace and store.resource.namespaced else ""

        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        watcher: Watcher | None = None
        try:
            if version == "" or (send_initial and version != "0"):
                # Consistent start: the current state read from etcd, then every change after.
                listed = await store.list(namespace, ListOptions(options.label_selector,
                                                                 options.field_selector))
                items = [o for o in listed.items if matches is None or matches(o)]
                watcher = cache.watch(listed.resource_version, matches,
                                      namespace_prefix=ns_prefix, initial=items)
            elif version == "0":
                watcher = cache.watch(None, matches, namespace_prefix=ns_prefix)
            else:
                watcher = cache.watch(int(version), matches, namespace_prefix=ns_prefix)
        except errors.APIError as err:
            await response.prepare(request)
            await response.write(orjson.dumps({"type": ERROR, "object": err.status()}) + b"\n")
            await response.write_eof()
            return response

        await response.prepare(request)
        encode = self._event_encoder(store.resource, wanted, request)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        next_bookmark = loop.time() + BOOKMARK_INTERVAL
        initial_pending = send_initial
        try:
            while True:
                now = loop.time()
                if now >= deadline:
                    break
                wait = min(deadline, next_bookmark) - now
                if initial_pending:
                    wait = 0
                batch = await watcher.next_batch(timeout=wait)
                if batch:
                    chunk = b"".join(encode(t, o, e) for t, o, e in batch)
                    watcher.last_revision = max(
                        watcher.last_revision, int(batch[-1][1]["metadata"]["resourceVersion"])
                    )
                    await response.write(chunk)
                elif watcher.closed:
                    break
                if initial_pending and not watcher.queue:
                    initial_pending = False
                    await response.write(self._bookmark(store.resource, max(
                        watcher.last_revision, cache.revision), initial_end=True))
                if bookmarks and loop.time() >= next_bookmark:
                    next_bookmark = loop.time() + BOOKMARK_INTERVAL
                    if not watcher.queue:
                        watcher.last_revision = max(watcher.last_revision, cache.revision)
                        await response.write(
                            self._bookmark(store.resource, watcher.last_revision))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            cache.stop_watching(watcher)
        try:
            await response.write_eof()
        except ConnectionResetError:
            pass
        return response

    def _bookmark(self, resource: Resource, revision: int, *, initial_end: bool = False) -> bytes:
        metadata: Obj = {"resourceVersion": str(revision)}
        if initial_end:
            metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": metadata}
        return orjson.dumps({"type": BOOKMARK, "object": obj}) + b"\n"

    def _event_encoder(self, resource: Resource, wanted: Wanted, request: web.Request
                       ) -> Callable[[str, Obj, CacheEvent | None], bytes]:
        plain = wanted.form == "object" and resource.group != "events.k8s.io"

        def encode(type: str, obj: Obj, event: CacheEvent | None) -> bytes:
            if plain:
                if event is not None and event.type == type and event.obj is obj:
                    return event.wire()
                return orjson.dumps({"type": type, "object": obj}) + b"\n"
            rendered = self._render_one(resource, obj, wanted, request)
            return orjson.dumps({"type": type, "object": rendered}) + b"\n"

        return encode

    # -- write verbs ----------------------------------------------------------------------

    async def _read_object(self, request: web.Request, resource: Resource, kind: str,
                           api_version: str) -> Obj:
        body = await request.read()
        try:
            obj = negotiation.decode_body(request.headers.get("Content-Type", ""), body)
            if not isinstance(obj, dict):
                raise errors.bad_request(
                    "couldn't get version/kind; json parse error: json: cannot unmarshal "
                    f"{json_type(obj)} into Go value of type struct {{ APIVersion string; "
                    "Kind string }")
        except errors.APIError as err:
            if err.code != 400:
                raise
            # Upstream's transformDecodeError: the body named no kind we could read.
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): {err.message} "
                f"({summarize_body(body)})") from None
        self._check_type(obj, kind, api_version)
        return obj

    @staticmethod
    def _check_type(obj: Obj, kind: str, api_version: str) -> None:
        """The body's kind/apiVersion must match the URL (filled in when absent).

        Upstream decodes the body as the type it names and then fails to convert it (or
        finds no such type); transformDecodeError reports either as a 400.
        """
        body_kind = obj.get("kind") or kind
        body_version = obj.get("apiVersion") or api_version
        if (body_kind, body_version) != (kind, api_version):
            version = body_version.rsplit("/", 1)[-1]
            if by_kind(body_version, body_kind) is not None:
                group = api_version.split("/")[0].split(".")[0] if "/" in api_version else "core"
                why = (f"converting ({version}.{body_kind}) to ({group}.{kind}): "
                       "unknown conversion")
            else:
                why = (f'no kind "{body_kind}" is registered for version "{body_version}" in '
                       'scheme "pkg/api/legacyscheme/scheme.go:30"')
            raise errors.bad_request(
                f'{body_kind} in version "{version}" cannot be handled as a {kind}: {why}')
        # apiVersion and kind first, as kubectl prints objects and etcdctl shows them.
        rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        obj.clear()
        obj["apiVersion"] = api_version
        obj["kind"] = kind
        obj.update(rest)
        if "metadata" in obj and not isinstance(obj["metadata"], dict):
            raise errors.bad_request(
                "json: cannot unmarshal into Go struct field .metadata of type v1.ObjectMeta")

    def _field_validation(self, request: web.Request, resource: Resource, obj: Obj,
                          kind: str = "", group: str | None = None, version: str = ""
                          ) -> list[str]:
        """fieldValidation: Strict rejects unknown fields, Warn (default) and Ignore drop them."""
        mode = request.query.get("fieldValidation", "Warn")
        if mode not in ("Strict", "Warn", "Ignore"):
            raise errors.bad_request(
                f"fieldValidation parameter unsupported: {mode!r}; must be one of Ignore, "
                "Warn, Strict")
        schema = schema_for(group if group is not None else resource.group,
                            version or resource.version, kind or resource.kind)
        if schema is None:
            return []
        unknown = unknown_fields(obj, schema)
        if not unknown:
            return []
        kind_name = kind or resource.kind
        if mode == "Strict":
            listed = ", ".join(f'unknown field "{path}"' for path in unknown)
            raise errors.bad_request(
                f'{kind_name} in version "{version or resource.version}" cannot be handled as a '
                f"{kind_name}: strict decoding error: {listed}"
            )
        for path in unknown:
            drop_path(obj, path)
        if mode == "Ignore":
            return []
        return [f'unknown field "{path}"' for path in unknown]

    @staticmethod
    def _dry_run(request: web.Request) -> bool:
        values = request.query.getall("dryRun", [])
        for value in values:
            if value != "All":
                raise errors.bad_request(f"Invalid dry run value: {value!r}; must be All")
        return bool(values)

    async def create(self, request: web.Request, info: RequestInfo, store: Store, namespace: str,
                     wanted: Wanted) -> web.StreamResponse:
        resource = store.resource
        obj = await self._read_object(request, resource, resource.kind, resource.api_version)
        if resource.group == "events.k8s.io":
            warnings = self._field_validation(request, resource, obj)
            obj = conversion.events_v1_to_core_event(obj)
        else:
            warnings = self._field_validation(request, resource, obj)
        body_ns = obj.get("metadata", {}).get("namespace")
        if resource.namespaced and body_ns and body_ns != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request")
        if not resource.namespaced:
            obj.get("metadata", {}).pop("namespace", None)
        created = await store.create(namespace, obj, dry_run=self._dry_run(request))
        return respond(self._render_one(resource, created, wanted, request), wanted, 201, warnings)

    async def update(self, request: web.Request, info: RequestInfo, store: Store, namespace: str,
                     wanted: Wanted) -> web.StreamResponse:
        resource = store.resource
        obj = await self._read_object(request, resource, resource.kind, resource.api_version)
        warnings = self._field_validation(request, resource, obj)
        if resource.group == "events.k8s.io":
            obj = conversion.events_v1_to_core_event(obj)
        metadata = obj.setdefault("metadata", {})
        if metadata.get("name") not in (None, info.name):
            raise errors.bad_request(
                f"the name of the object ({metadata.get('name')}) does not match the name on "
                f"the URL ({info.name})")
        body_ns = metadata.get("namespace")
        if resource.namespaced and body_ns and body_ns != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request")
        metadata["name"] = info.name
        if info.subresource == "finalize":
            updated = await self._finalize_namespace(store, info.name, obj)
        else:
            updated = await store.update(namespace, info.name, obj, subresource=info.subresource,
                                         dry_run=self._dry_run(request))
        return respond(self._render_one(resource, updated, wanted, request), wanted, 200, warnings)

    async def _finalize_namespace(self, store: Store, name: str, obj: Obj) -> Obj:
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

    async def patch(self, request: web.Request, info: RequestInfo, store: Store, namespace: str,
                    wanted: Wanted) -> web.StreamResponse:
        resource = store.resource
        kind = negotiation.patch_type(request.headers.get("Content-Type", ""))
        body = await request.read()
        patch = negotiation.parse_json(body)
        if kind == "application/json-patch+json":
            if not isinstance(patch, list):
                raise errors.bad_request(
                    "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        elif not isinstance(patch, dict):
            raise errors.bad_request(
                "json: cannot unmarshal array into Go value of type map[string]interface {}")
        schema = schema_for(resource.group, resource.version, resource.kind)
        warnings: list[str] = []
        external = resource.group == "events.k8s.io"

        def mutate(current: Obj) -> Obj:
            original = self._external(resource, current)
            try:
                if kind == "application/json-patch+json":
                    patched = apply_json_patch(original, patch)
                elif kind == "application/merge-patch+json":
                    patched = apply_merge_patch(original, patch)
                else:
                    patched = apply_strategic_merge_patch(original, patch, schema)
            except PatchError as err:
                raise patch_failed(err, kind) from None
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch did not produce an object")
            self._check_type(patched, resource.kind, resource.api_version)
            warnings[:] = self._field_validation(request, resource, patched)
            if external:
                patched = conversion.events_v1_to_core_event(patched)
            metadata = meta.metadata(patched)
            if metadata.get("name") != info.name:
                raise errors.bad_request(
                    f"the name of the object ({metadata.get('name')}) does not match the name "
                    f"on the URL ({info.name})")
            if resource.namespaced and metadata.get("namespace") != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request")
            wanted_rv = metadata.get("resourceVersion")
            if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
                raise errors.conflict(resource.plural, resource.group, info.name,
                                      errors.OBJECT_MODIFIED)
            return store.prepare_update(patched, current, info.subresource)

        if self._dry_run(request):
            updated = mutate(copy.deepcopy(await store.get(namespace, info.name)))
        else:
            updated = await store.guaranteed_update(namespace, info.name, mutate)
        return respond(self._render_one(resource, updated, wanted, request), wanted, 200, warnings)

    async def _delete_options(self, request: web.Request) -> DeleteOptions:
        options = DeleteOptions()
        body = await request.read()
        if body.strip():
            parsed = negotiation.decode_body(request.headers.get("Content-Type", ""), body)
            if not isinstance(parsed, dict):
                raise errors.bad_request("the body of a delete must be a DeleteOptions object")
            kind = parsed.get("kind")
            if kind not in (None, "", "DeleteOptions"):
                raise errors.bad_request(
                    f"the kind in the data ({kind}) does not match the expected kind "
                    "(DeleteOptions)")
            options.grace_period_seconds = parsed.get("gracePeriodSeconds")
            options.propagation_policy = parsed.get("propagationPolicy")
            if parsed.get("orphanDependents") is True and not options.propagation_policy:
                options.propagation_policy = "Orphan"
            options.preconditions = parsed.get("preconditions") or {}
            options.dry_run = bool(parsed.get("dryRun"))
        grace = query_int(request, "gracePeriodSeconds")
        if grace is not None:
            options.grace_period_seconds = grace
        policy = request.query.get("propagationPolicy")
        if policy:
            options.propagation_policy = policy
        if options.propagation_policy not in (None, "Orphan", "Background", "Foreground"):
            raise errors.APIError(
                422, "Invalid",
                f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                f'"{options.propagation_policy}": supported values: "Foreground", "Background", '
                f'"Orphan", "nil"')
        if options.grace_period_seconds is not None and (
            not isinstance(options.grace_period_seconds, int) or options.grace_period_seconds < 0
        ):
            raise errors.APIError(
                422, "Invalid",
                'DeleteOptions.meta.k8s.io "" is invalid: gracePeriodSeconds: Invalid value: '
                f"{options.grace_period_seconds}: must be greater than or equal to 0")
        options.dry_run = options.dry_run or self._dry_run(request)
        return options

    async def delete(self, request: web.Request, info: RequestInfo, store: Store, namespace: str,
                     wanted: Wanted) -> web.StreamResponse:
        resource = store.resource
        options = await self._delete_options(request)
        obj, gone = await store.delete(namespace, info.name, options)
        status = 200 if gone else 202
        if resource.plural in ("pods", "namespaces", "services") or not gone:
            return respond(self._render_one(resource, obj, wanted, request), wanted, status)
        details = {"name": info.name, "kind": resource.plural,
                   "uid": obj["metadata"].get("uid", "")}
        if resource.group:
            details["group"] = resource.group
        return respond(success_status(200, details), wanted, status)

    async def delete_collection(self, request: web.Request, info: RequestInfo, store: Store,
                                namespace: str, wanted: Wanted) -> web.StreamResponse:
        options = self._list_options(request)
        self._check_field_labels(store, options)
        delete_options = await self._delete_options(request)
        listed = await store.list(namespace, ListOptions(options.label_selector,
                                                         options.field_selector))
        deleted = []
        for obj in listed.items:
            metadata = obj["metadata"]
            try:
                removed, _ = await store.delete(metadata.get("namespace", ""), metadata["name"],
                                                delete_options)
            except errors.APIError as err:
                if err.code == 404:
                    continue
                raise
            deleted.append(removed)
        result = ListResult(deleted, listed.resource_version)
        return respond(self._list_body(store.resource, result, wanted, request), wanted)

    # -- subresources ---------------------------------------------------------------------

    async def bind(self, request: web.Request, info: RequestInfo, namespace: str
                   ) -> web.StreamResponse:
        """pods/binding: set spec.nodeName once (the scheduler's last step)."""
        pods = self.stores[("", "v1", "pods")]
        binding = await self._read_object(request, pods.resource, "Binding", "v1")
        metadata = binding.get("metadata") or {}
        name = info.name if info.subresource == "binding" else metadata.get("name", "")
        if info.subresource == "binding" and metadata.get("name") not in (None, "", name):
            raise errors.bad_request(
                f"the name of the object ({metadata.get('name')}) does not match the name on "
                f"the URL ({name})")
        if metadata.get("namespace") not in (None, "", namespace):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request")
        target = binding.get("target") or {}
        node = target.get("name") if isinstance(target, dict) else None
        if not name:
            raise errors.APIError(
                422, "Invalid", f'Binding "{name}" is invalid: metadata.name: Required value: '
                "name or generateName is required", {"name": name, "kind": "Binding"})
        # Upstream's BindingREST returns these as a plain error (a 500 with no reason); we
        # answer 422 Invalid instead, since a 500 should only ever mean a server bug.
        problems = []
        if isinstance(target, dict) and target.get("kind") not in (None, "", "Node"):
            problems.append(f'target.kind: Unsupported value: "{target.get("kind")}": '
                            'supported values: "Node", "<empty>"')
        if not node:
            problems.append("target.name: Required value")
        if problems:
            summary = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
            raise errors.APIError(422, "Invalid", f'Binding "{name}" is invalid: {summary}',
                                  {"name": name, "kind": "Binding"})
        uid = (metadata.get("uid") or "")

        def assign(pod: Obj) -> Obj:
            pod_meta = pod["metadata"]
            if uid and pod_meta.get("uid") != uid:
                raise errors.conflict("pods/binding", "", name,
                                      f"Precondition failed: UID in precondition: {uid}, "
                                      f"UID in object meta: {pod_meta.get('uid')}")
            if pod_meta.get("deletionTimestamp"):
                raise errors.conflict("pods/binding", "", name,
                                      f"pod {name} is being deleted, cannot be assigned to a host")
            current_node = pod.get("spec", {}).get("nodeName")
            if current_node:
                raise errors.conflict("pods/binding", "", name,
                                      f'pod {name} is already assigned to node "{current_node}"')
            pod["spec"]["nodeName"] = node
            for key, value in (metadata.get("annotations") or {}).items():
                pod_meta.setdefault("annotations", {})[key] = value
            status = pod.setdefault("status", {})
            conditions = [c for c in status.get("conditions", [])
                          if c.get("type") != "PodScheduled"]
            conditions.append({"type": "PodScheduled", "status": "True",
                               "lastProbeTime": None,
                               "lastTransitionTime": meta.rfc3339(meta.now())})
            status["conditions"] = conditions
            return pod

        await pods.guaranteed_update(namespace, name, assign)
        return json_response(success_status(201), 201)

    async def scale(self, request: web.Request, info: RequestInfo, store: Store, namespace: str,
                    wanted: Wanted) -> web.StreamResponse:
        """The /scale subresource: an autoscaling/v1 Scale view of spec.replicas."""
        resource = store.resource
        if info.verb == "get":
            obj = await store.get(namespace, info.name)
            return respond(to_scale(obj), wanted)
        if info.verb == "update":
            body = await self._read_object(request, resource, "Scale", "autoscaling/v1")
            warnings = self._field_validation(request, resource, body, "Scale", "autoscaling",
                                              "v1")

            def from_body(_current_scale: Obj) -> Obj:
                return body
        else:
            kind = negotiation.patch_type(request.headers.get("Content-Type", ""))
            patch = negotiation.parse_json(await request.read())
            warnings = []

            def from_body(current_scale: Obj) -> Obj:
                try:
                    if kind == "application/json-patch+json":
                        return apply_json_patch(current_scale, patch)
                    if kind == "application/merge-patch+json":
                        return apply_merge_patch(current_scale, patch)
                    return apply_strategic_merge_patch(
                        current_scale, patch, schema_for("autoscaling", "v1", "Scale"))
                except PatchError as err:
                    raise patch_failed(err, kind) from None

        def mutate(current: Obj) -> Obj:
            scale = from_body(to_scale(current))
            scale_meta = scale.get("metadata") or {}
            wanted_rv = scale_meta.get("resourceVersion")
            if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
                raise errors.conflict(resource.plural, resource.group, info.name,
                                      errors.OBJECT_MODIFIED)
            replicas = (scale.get("spec") or {}).get("replicas", 0)
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise errors.APIError(
                    422, "Invalid",
                    f'Scale.autoscaling "{info.name}" is invalid: spec.replicas: Invalid value: '
                    f"{replicas}: must be greater than or equal to 0",
                    {"name": info.name, "group": "autoscaling", "kind": "Scale",
                     "causes": [{"reason": "FieldValueInvalid",
                                 "message": f"Invalid value: {replicas}: must be greater than "
                                            "or equal to 0",
                                 "field": "spec.replicas"}]})
            new = copy.deepcopy(current)
            new.setdefault("spec", {})["replicas"] = replicas
            return store.prepare_update(new, current, "")

        if self._dry_run(request):
            updated = mutate(copy.deepcopy(await store.get(namespace, info.name)))
        else:
            updated = await store.guaranteed_update(namespace, info.name, mutate)
        return respond(to_scale(updated), wanted, 200, warnings)


def json_type(value: Any) -> str:
    """How Go's encoding/json names a JSON value's type in its unmarshal errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {list: "array", str: "string"}.get(type(value), "null")


def summarize_body(body: bytes, limit: int = 30) -> str:
    """A short view of a body for error messages: JSON objects as text, anything else as hex."""
    if not body:
        return "<empty>"
    text = body[:limit].decode("utf-8", "replace") if body[:1] == b"{" else body[:limit].hex()
    return text + " ..." if len(body) > limit else text


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


def to_scale(obj: Obj) -> Obj:
    """autoscaling/v1 Scale of a workload: spec.replicas and the selector as a string."""
    metadata = obj["metadata"]
    selector = (obj.get("spec") or {}).get("selector")
    status = {"replicas": (obj.get("status") or {}).get("replicas", 0)}
    if isinstance(selector, dict):
        status["selector"] = label_selector_to_string(selector)
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: metadata[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                              "creationTimestamp") if k in metadata},
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": status,
    }


def drop_path(obj: Any, path: str) -> None:
    """Remove the field at a path such as `spec.containers[0].bogus` (unknown-field pruning)."""
    steps: list[str | int] = []
    for part in path.split("."):
        while "[" in part:
            head, rest = part.split("[", 1)
            if head:
                steps.append(head)
            index, part = rest.split("]", 1)
            steps.append(int(index) if index.isdigit() else index)
        if part:
            steps.append(part)
    target = obj
    for step in steps[:-1]:
        try:
            target = target[step]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(target, dict):
        target.pop(steps[-1], None)


def now_ms() -> float:
    return time.monotonic() * 1000
