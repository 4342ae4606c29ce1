"""The generic store: create, get, list, update, patch and delete for every resource.

Upstream's `genericregistry.Store` (k8s.io/apiserver/pkg/registry/generic/registry): one
implementation of every verb, with a `Strategy` (strategy.py) supplying the steps that
differ by kind. The store is the only code that writes objects to etcd:

    create: name/uid/timestamps -> strategy.prepare_for_create -> default
            -> mutating admission -> managedFields -> validate -> validating admission
            -> always-written fields
            -> etcd Txn "create_revision == 0" (409 AlreadyExists when it fails)
    update: read -> precondition on resourceVersion -> prepare_for_update -> default
            -> mutating admission -> validate_update -> validating admission
            -> always-written fields -> managedFields
            -> etcd Txn "mod_revision == read revision" (retry or 409)

"always-written fields" are the empty fields upstream's JSON carries anyway (Go writes a
field without `omitempty`, and every struct): api/schema/written.py.
    delete: preconditions -> admission -> graceful (deletionTimestamp) or finalizers
            pending? -> mark the object : remove it with a Txn

Admission (admission/) is the chain of plugins the server hands every store: mutating
plugins may change the object, validating ones only refuse.

Tracing (tracing.py): a create records the request's trace on the object; an update keeps
it, and the request's span joins it. Clients never see it (responses.py leaves it out).

"managedFields" is the field manager's record of who changed what (server-side apply:
`api/managedfields`), kept only for objects that already have one.

A rejected request never reaches etcd, so it changes nothing.
"""

from __future__ import annotations

import base64
import binascii
import copy
import inspect
import re
from bisect import bisect_left
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import orjson

from minikube_py.api import Obj, errors, meta
from minikube_py.api.managedfields import FieldManager
from minikube_py.api.managedfields.fieldpath import FieldSet, field_element
from minikube_py.api.resources import Resource
from minikube_py.api.schema import schema_for
from minikube_py.api.schema.written import always_written, fill_always_written
from minikube_py.api.selectors import FieldSelector, LabelSelector
from minikube_py.api.validation import (
    FieldError,
    validate_object_meta,
    validate_object_meta_update,
)
from minikube_py.apiserver.auth.admission import CREATE, DELETE, UPDATE, Attributes, Chain
from minikube_py.apiserver.endpoints import tracing
from minikube_py.apiserver.registry.strategies.base import Strategy
from minikube_py.apiserver.storage.consistent_read import consistent_revision
from minikube_py.apiserver.storage.etcd import (
    CompactedError,
    EtcdClient,
    EtcdTimeout,
    EtcdUnavailable,
    KeyExistsError,
    KeyValue,
    RevisionMismatch,
    map_in_slices,
    prefix_end,
)
from minikube_py.apiserver.storage.watchcache import WatchCache, decode
from minikube_py.tracing.context import ANNOTATION

# A guaranteed update's change: the new object from a copy of the stored one, at once or
# after awaiting (an update that goes through admission awaits its plugins).
Mutation = Callable[[Obj], Obj | Awaitable[Obj]]

MAX_UPDATE_ATTEMPTS = 16
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter, or use the continue token "
    "in this response to retrieve the remainder of the results. Continuing with the provided "
    "token results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)


@dataclass
class ListOptions:
    label_selector: LabelSelector
    field_selector: FieldSelector
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


@dataclass
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    preconditions: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False


@dataclass
class ListResult:
    items: list[Obj]
    resource_version: int
    continue_token: str = ""
    remaining_item_count: int | None = None
    # With raw=True: the items as JSON bytes, ready to send (and `items` stays empty).
    raw_items: list[bytes] | None = None


# The trace context is the server's: no managedFields entry ever names it (tracing.py).
UNOWNED_FIELDS = FieldSet.of(
    (field_element("metadata"), field_element("annotations"), field_element(ANNOTATION)))

# What every object this server stores starts with (strings in JSON hold no bare quote).
_STORED_PREFIX = re.compile(rb'\{"apiVersion":"[^"\\]*","kind":"[^"\\]*","metadata":\{')


def wire_json(kv: KeyValue) -> bytes:
    """The object's JSON as clients see it, spliced from the stored bytes.

    The etcd value already is the object's JSON, missing only metadata.resourceVersion
    (the key's mod_revision). Inserting it into the bytes skips a decode and an encode
    per object, which is most of the time a large list takes.
    """
    stored = kv.value
    found = _STORED_PREFIX.match(stored)
    if found is None:
        return orjson.dumps(decode(kv))
    end = found.end()
    version = b'"resourceVersion":"%d"' % kv.mod_revision
    separator = b"" if stored[end : end + 1] == b"}" else b","
    return stored[:end] + version + separator + stored[end:]


# orjson encodes no value nested past 254 arrays and objects. An object this server keeps
# must still encode inside what it is sent in (a watch event, a list, a table's row, an
# AdmissionReview) and with its managedFields, whose fieldsV1 follow its own nesting.
ENCODER_DEPTH = 254
DEPTH_HEADROOM = 10
MAX_OBJECT_DEPTH = ENCODER_DEPTH - DEPTH_HEADROOM


def refuse_too_deep(obj: Obj) -> None:
    """A 400 for an object nested more than MAX_OBJECT_DEPTH levels (a body orjson reads,
    up to 1,024 levels, and could not write back), before any admission or write: the
    object is encoded inside DEPTH_HEADROOM lists, so orjson's own limit does the
    counting."""
    wrapped: Any = obj
    for _ in range(DEPTH_HEADROOM):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except orjson.JSONEncodeError:
        raise errors.bad_request(
            f"the object is nested more than {MAX_OBJECT_DEPTH} levels deep, "
            "the most this API server stores") from None


def encode(obj: Obj) -> bytes:
    """The etcd value: the object's JSON without resourceVersion (etcd's revision is it)."""
    metadata = obj.get("metadata") or {}
    if "resourceVersion" in metadata:
        obj = {**obj, "metadata": {k: v for k, v in metadata.items() if k != "resourceVersion"}}
    return orjson.dumps(obj)


def deletion_finalizers(finalizers: list[str], policy: str | None, default_policy: str
                        ) -> list[str]:
    """deletionFinalizersForGarbageCollection: the finalizers after a delete.

    Orphan adds `orphan`, Foreground adds `foregroundDeletion`, Background removes both.
    Without a policy a garbage-collection finalizer already there stays; otherwise the
    kind's default applies (OrphanDependents adds `orphan`). The garbage collector does
    the work these finalizers ask for, then removes them.
    """
    if default_policy == "Unsupported":
        return finalizers
    gc_finalizers = (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)
    if policy is None:
        if any(name in gc_finalizers for name in finalizers):
            return finalizers
        policy = "Orphan" if default_policy == "OrphanDependents" else "Background"
    kept = [name for name in finalizers if name not in gc_finalizers]
    if policy == "Orphan":
        kept.append(ORPHAN_FINALIZER)
    elif policy == "Foreground":
        kept.append(FOREGROUND_FINALIZER)
    return finalizers if set(kept) == set(finalizers) else kept


def delegate_list(options: ListOptions) -> bool:
    """Whether a list must read etcd, whatever the cache holds (upstream's
    shouldDelegateList): an exact resourceVersion match, a limit with a resourceVersion
    other than "" or "0" (the legacy exact match), and any other resourceVersion (the
    cache would have to wait for it; etcd answers at once). "0" (any state), ""
    (a consistent read) and a continue token (when the cache still holds the state it
    continues) may use the cache."""
    if options.resource_version_match == "Exact":
        return True
    return not options.continue_token and options.resource_version not in ("", "0")


def etcd_errors(call: Any) -> Any:
    """Map storage failures to upstream's Status errors (503/504, 410)."""

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await call(*args, **kwargs)
        except EtcdUnavailable as err:
            raise errors.service_unavailable(f"etcd is unavailable: {err}") from err
        except EtcdTimeout as err:
            raise errors.timeout(
                "The request did not complete in time: etcd request timed out"
            ) from err

    wrapper.__name__ = call.__name__
    wrapper.__doc__ = call.__doc__
    return wrapper


class Store:
    """Every verb of one resource, on top of etcd and the resource's watch cache."""

    def __init__(
        self,
        resource: Resource,
        strategy: Strategy,
        etcd: EtcdClient,
        cache: WatchCache,
        admission: Chain | None = None,
    ) -> None:
        self.resource = resource
        self.strategy = strategy
        self.etcd = etcd
        self.cache = cache
        self.admission = admission or Chain()
        self.field_manager = FieldManager(
            schema_for(resource.group, resource.version, resource.kind), resource.api_version,
            strategy.reset_fields(), UNOWNED_FIELDS)
        self.always_written = always_written(
            *(strategy.storage_kind or (resource.api_version, resource.kind)))

    # -- helpers ---------------------------------------------------------------------------

    def key(self, namespace: str, name: str) -> str:
        return self.resource.etcd_key(namespace, name)

    def _not_found(self, name: str) -> errors.APIError:
        return errors.not_found(self.resource.plural, self.resource.group, name)

    def _invalid(self, obj: Obj, problems: list[FieldError]) -> errors.APIError:
        return errors.invalid(
            self.resource.kind, self.resource.group, meta.name_of(obj), problems
        )

    def _conflict(self, name: str) -> errors.APIError:
        return errors.conflict(
            self.resource.plural, self.resource.group, name, errors.OBJECT_MODIFIED
        )

    def _validate_meta(self, obj: Obj, old: Obj | None) -> list[FieldError]:
        problems = validate_object_meta(
            obj.get("metadata"), namespaced=self.resource.namespaced,
            name_validator=self.strategy.name_validator)
        if old is not None and isinstance(obj.get("metadata"), dict):
            problems += validate_object_meta_update(obj["metadata"], old["metadata"])
        return problems

    # -- create ----------------------------------------------------------------------------

    @etcd_errors
    async def create(self, namespace: str, obj: Obj, *, dry_run: bool = False,
                     manager: str | None = None, admit: bool = True) -> Obj:
        """Create: fill in server-set metadata, prepare, default, admit, validate, then
        one Txn.

        `manager` names the writer for managedFields; None leaves them as the caller set
        them (server-side apply has). admit=False leaves out admission, for a store that
        runs it itself (services reserve their IPs between the two phases).
        """
        refuse_too_deep(obj)
        metadata = meta.metadata(obj)
        if self.resource.namespaced:
            metadata["namespace"] = namespace
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = meta.generate_name(str(metadata["generateName"]))
        metadata.pop("resourceVersion", None)
        metadata["uid"] = meta.new_uid()
        metadata["creationTimestamp"] = meta.now_rfc3339()
        for server_set in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            metadata.pop(server_set, None)

        problems = self._validate_meta(obj, None)
        if problems:
            raise self._invalid(obj, problems)
        self.strategy.prepare_for_create(obj)
        self.strategy.default(obj)
        admission = self.create_attributes(namespace, obj, dry_run)
        if admit:
            await self.admit_create(admission)
        if manager is not None:
            await self.field_manager.update(None, obj, manager)
        elif "managedFields" in metadata:
            # Set by server-side apply: keep them last in metadata, where every later write
            # puts them, so that applying the same configuration again encodes the same.
            metadata["managedFields"] = metadata.pop("managedFields")
        problems = self.strategy.validate(obj)
        if problems:
            raise self._invalid(obj, problems)
        if admit:
            await self.admission.validate(admission)
        fill_always_written(obj, self.always_written)
        if dry_run:
            return obj
        obj = await self.strategy.convert_to_storage(obj)
        metadata = obj["metadata"]

        name = metadata["name"]
        tracing.record_create(obj)
        try:
            revision = await self.etcd.create(self.key(namespace, name).encode(), encode(obj))
        except KeyExistsError:
            raise errors.already_exists(self.resource.plural, self.resource.group, name) from None
        metadata["resourceVersion"] = str(revision)
        tracing.record_revision(revision)
        return obj

    def create_attributes(self, namespace: str, obj: Obj, dry_run: bool) -> Attributes:
        name = obj["metadata"].get("name", "")
        return self.admission.attributes(self.resource, CREATE, namespace, name, obj, None,
                                         dry_run=dry_run)

    async def admit_create(self, admission: Attributes) -> None:
        """Mutating admission of a create; what a plugin changed is prepared and
        defaulted too."""
        obj = admission.obj
        assert obj is not None
        if await self.admission.admit(admission):
            self.strategy.prepare_for_create(obj)
            self.strategy.default(obj)

    # -- read ------------------------------------------------------------------------------

    @etcd_errors
    async def get(self, namespace: str, name: str, *, resource_version: str = "") -> Obj:
        """Get: resourceVersion "0" may be served from the cache, otherwise read etcd."""
        key = self.key(namespace, name)
        if resource_version == "0" and self.cache.ready.is_set():
            cached = self.cache.get(key)
            if cached is None:
                raise self._not_found(name)
            return cached
        kv = await self.etcd.get(key.encode())
        if kv is None:
            raise self._not_found(name)
        return decode(kv)

    @etcd_errors
    async def list(self, namespace: str, options: ListOptions, *, raw: bool = False
                   ) -> ListResult:
        """List: from the watch cache when allowed, else a paginated read of etcd.

        resourceVersion "0": the cache as it is. "" (a consistent read): the cache once
        it is shown to hold etcd's current objects (storage/consistent_read.py), else
        etcd; the feature gate ConsistentListFromCache off: etcd. The rest: etcd
        (delegate_list). Selectors filter the cache's objects as they filter etcd's.
        raw=True (only without selectors) may answer an etcd read with `raw_items`, the
        objects' JSON.
        """
        def matches(obj: Obj) -> bool:
            if not options.label_selector.matches(meta.labels_of(obj)):
                return False
            if options.field_selector.empty():
                return True
            return options.field_selector.matches(self.strategy.field_set(obj))

        namespace_prefix = f"{namespace}/" if namespace and self.resource.namespaced else ""
        raw = raw and options.label_selector.empty() and options.field_selector.empty()
        cache = self.cache
        if delegate_list(options) or not cache.ready.is_set():
            return await self._list_from_etcd(namespace_prefix, options, matches, raw)
        if options.continue_token:
            # The next page, from the cache while its objects are still etcd's at the
            # token's revision (nothing changed since the page before); etcd otherwise.
            start, revision = self._decode_continue(options.continue_token)
            if (cache.consistent_list_from_cache
                    and cache.holds_state_at(revision, namespace_prefix)):
                return self._list_from_cache(namespace_prefix, options, matches, revision,
                                             limit=options.limit, start=start)
            return await self._list_from_etcd(namespace_prefix, options, matches, raw)
        if options.resource_version == "0":
            # Any state will do: the cache as it is, the limit ignored (as upstream).
            return self._list_from_cache(namespace_prefix, options, matches,
                                         cache.revision, limit=0)
        if not cache.consistent_list_from_cache:
            return await self._list_from_etcd(namespace_prefix, options, matches, raw)
        revision = await consistent_revision(cache, self.etcd,
                                             namespace_prefix=namespace_prefix)
        if revision is not None:
            # No await since the check: the cache still holds what it found fresh.
            self._count_consistent_read(success=True, fallback=False)
            return self._list_from_cache(namespace_prefix, options, matches, revision,
                                         limit=options.limit)
        try:
            listed = await self._list_from_etcd(namespace_prefix, options, matches, raw)
        except Exception:
            self._count_consistent_read(success=False, fallback=True)
            raise
        self._count_consistent_read(success=True, fallback=True)
        return listed

    def _count_consistent_read(self, *, success: bool, fallback: bool) -> None:
        if self.cache.on_consistent_read is not None:
            self.cache.on_consistent_read(success, fallback)

    def _list_from_cache(self, namespace_prefix: str, options: ListOptions,
                         matches: Callable[[Obj], bool], revision: int, *, limit: int,
                         start: str = "") -> ListResult:
        """The cache's objects that match, at `revision`, from the key `start` (after
        the prefix) on. With a limit, a page: its continue token reads the next one at
        `revision`, from the cache while it still holds that state, else from etcd (etcd
        holds the very same objects there), as upstream continues from its snapshots."""
        cache = self.cache
        everything = options.label_selector.empty() and options.field_selector.empty()
        if not limit and not start:
            if everything:
                return ListResult(cache.list(namespace_prefix), revision)
            return ListResult([o for o in cache.list(namespace_prefix) if matches(o)],
                              revision)
        prefix = self.resource.etcd_prefix + namespace_prefix
        keys = cache.keys(namespace_prefix)
        objects = cache.objects
        items: list[Obj] = []
        for position in range(bisect_left(keys, prefix + start), len(keys)):
            key = keys[position]
            obj = objects[key]
            if everything or matches(obj):
                items.append(obj)
                if len(items) == limit:
                    left = len(keys) - position - 1
                    if not left:
                        break
                    token = self._encode_continue(key[len(prefix):] + "\x00", revision)
                    return ListResult(items, revision, token, left if everything else None)
        return ListResult(items, revision)

    async def _list_from_etcd(
        self,
        namespace_prefix: str,
        options: ListOptions,
        matches: Callable[[Obj], bool],
        raw: bool = False,
    ) -> ListResult:
        prefix = (self.resource.etcd_prefix + namespace_prefix).encode()
        start, revision = prefix, 0
        if options.continue_token:
            start_suffix, revision = self._decode_continue(options.continue_token)
            start = prefix + start_suffix.encode()
        elif options.resource_version not in ("", "0"):
            revision = int(options.resource_version)
        limit = options.limit
        items: list[Obj] = []
        raw_items: list[bytes] = []
        more = False
        remaining: int | None = None
        last_key = b""
        while True:
            want = limit - len(items) - len(raw_items) if limit else 0
            try:
                result = await self.etcd.range(
                    start, prefix_end(prefix), limit=want, revision=revision
                )
            except CompactedError:
                if options.continue_token:
                    raise errors.resource_expired(CONTINUE_EXPIRED) from None
                raise errors.resource_expired(
                    f"too old resource version: {revision}"
                ) from None
            revision = result.revision if revision == 0 else revision
            if raw:
                raw_items += await map_in_slices(wire_json, result.kvs)
            else:
                items += [obj for obj in await map_in_slices(decode, result.kvs)
                          if matches(obj)]
            if result.kvs:
                last_key = result.kvs[-1].key
            more = result.more
            if not more or (limit and len(items) + len(raw_items) >= limit):
                if more and options.label_selector.empty() and options.field_selector.empty():
                    remaining = result.count - len(result.kvs)
                break
            start = last_key + b"\x00"
        token = ""
        if more:
            suffix = (last_key + b"\x00")[len(prefix) :].decode()
            token = self._encode_continue(suffix, revision)
        return ListResult(items, revision, token, remaining, raw_items if raw else None)

    @staticmethod
    def _encode_continue(start: str, revision: int) -> str:
        body = orjson.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": start})
        return base64.urlsafe_b64encode(body).decode().rstrip("=")

    @staticmethod
    def _decode_continue(token: str) -> tuple[str, int]:
        try:
            padded = token + "=" * (-len(token) % 4)
            body = orjson.loads(base64.urlsafe_b64decode(padded))
            if body.get("v") != "meta.k8s.io/v1" or not isinstance(body.get("rv"), int):
                raise ValueError("unsupported continue token version")
            if body["rv"] <= 0:
                raise ValueError("invalid resource version")
            return str(body["start"]), body["rv"]
        except (ValueError, binascii.Error, KeyError, TypeError, orjson.JSONDecodeError) as err:
            raise errors.bad_request(
                f"invalid continue token: continue key is not valid: {err}") from None

    # -- update ----------------------------------------------------------------------------

    async def guaranteed_update(self, namespace: str, name: str, mutate: Mutation,
                                private_copy: Callable[[Obj], Obj] = copy.deepcopy) -> Obj:
        """Read, mutate, write with a mod_revision compare; retry when someone wrote first.

        `mutate` gets a private copy of the stored object and returns the new one; it raises
        an APIError (Conflict, Invalid...) to refuse. A caller whose mutation replaces
        parts of the object without changing them inside may pass a `private_copy` that
        copies only what it replaces. Upstream: GuaranteedUpdate.
        """
        key = self.key(namespace, name)
        # The first try starts from the watch cache's copy, as upstream's cacher does: the
        # write's compare on its mod_revision proves it was current. A conflict, a refusal
        # or no change at all on a copy not yet proven current sends us to etcd for the
        # live object, and the mutation is tried again on that.
        current = self.cache.get(key) if self.cache.ready.is_set() else None
        revision = int(current["metadata"]["resourceVersion"]) if current is not None else 0
        proven = False
        for _ in range(MAX_UPDATE_ATTEMPTS):
            if current is None:
                kv = await self.etcd.get(key.encode())
                if kv is None:
                    raise self._not_found(name)
                current, revision, proven = decode(kv), kv.mod_revision, True
            try:
                updated = mutate(private_copy(current))
                if inspect.isawaitable(updated):
                    updated = await updated
            except errors.APIError:
                if proven:
                    raise
                current = None
                continue
            if encode(updated) == encode(current):
                if proven:
                    return current
                current = None
                continue
            if self._finished_deleting(updated):
                try:
                    deleted_at, _ = await self.etcd.delete(key.encode(), revision)
                except RevisionMismatch:
                    current = None
                    continue
                updated["metadata"]["resourceVersion"] = str(deleted_at)
                return updated
            try:
                written_at = await self.etcd.update(key.encode(), encode(updated), revision)
            except RevisionMismatch:
                current = None
                continue
            updated["metadata"]["resourceVersion"] = str(written_at)
            tracing.record_revision(written_at)
            return updated
        raise self._conflict(name)

    def _finished_deleting(self, obj: Obj) -> bool:
        """An object being deleted goes once nothing blocks it (last finalizer removed)."""
        metadata = obj["metadata"]
        if not metadata.get("deletionTimestamp"):
            return False
        if metadata.get("deletionGracePeriodSeconds", 0) != 0:
            return False
        return not self.strategy.blocks_deletion(obj)

    def _check_resource_version(self, obj: Obj, current: Obj) -> None:
        wanted = (obj.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != current["metadata"]["resourceVersion"]:
            raise self._conflict(current["metadata"]["name"])

    @etcd_errors
    async def update(
        self,
        namespace: str,
        name: str,
        obj: Obj,
        *,
        subresource: str = "",
        dry_run: bool = False,
        manager: str = "",
    ) -> Obj:
        """Update (PUT): optimistic concurrency on the resourceVersion the client read."""

        async def mutate(stored: Obj) -> Obj:
            self._check_resource_version(obj, stored)
            current = (await self.strategy.convert_from_storage([stored]))[0]
            updated = await self.prepare_update(copy.deepcopy(obj), current, subresource,
                                                dry_run=dry_run)
            await self.field_manager.update(current, updated, manager, subresource)
            return await self.strategy.convert_to_storage(updated)

        if dry_run:
            return await mutate(await self.get(namespace, name))
        return await self.guaranteed_update(namespace, name, mutate)

    async def prepare_update(self, new: Obj, current: Obj, subresource: str, *,
                             dry_run: bool = False) -> Obj:
        """The strategy and admission steps of an update, on a fresh object `new` and the
        stored one."""
        refuse_too_deep(new)
        self._prepare_update(new, current, subresource)
        admission = self.admission.attributes(
            self.resource, UPDATE, current["metadata"].get("namespace", ""),
            current["metadata"]["name"], new, current, subresource=subresource,
            dry_run=dry_run)
        if await self.admission.admit(admission):
            self._prepare_update(new, current, subresource)
        problems = self._validate_update(new, current, subresource)
        if problems:
            raise self._invalid(new, problems)
        await self.admission.validate(admission)
        fill_always_written(new, self.always_written)
        return new

    def _prepare_update(self, new: Obj, current: Obj, subresource: str) -> None:
        """Server-set metadata from the stored object, then the strategy's prepare and
        defaults."""
        metadata = meta.metadata(new)
        old_meta = current["metadata"]
        # A uid in the body is a precondition: it guards against a deleted and recreated
        # object of the same name (controllers adopt and release pods this way).
        if metadata.get("uid"):
            self._check_preconditions(current, {"uid": metadata["uid"]})
        # Server-set metadata cannot be changed by clients.
        for server_set in ("uid", "creationTimestamp", "deletionTimestamp",
                           "deletionGracePeriodSeconds", "generation"):
            if server_set in old_meta:
                metadata[server_set] = old_meta[server_set]
            else:
                metadata.pop(server_set, None)
        if self.resource.namespaced and "namespace" not in metadata:
            metadata["namespace"] = old_meta.get("namespace")
        metadata.setdefault("name", old_meta.get("name"))
        metadata["resourceVersion"] = old_meta["resourceVersion"]
        tracing.record_update(new, current)
        if subresource == "status":
            self.strategy.prepare_for_status_update(new, current)
        elif subresource:
            self.strategy.prepare_for_subresource_update(subresource, new, current)
            self.strategy.default(new)
        else:
            self.strategy.prepare_for_update(new, current)
            self.strategy.default(new)

    def _validate_update(self, new: Obj, current: Obj, subresource: str) -> list[FieldError]:
        if subresource == "status":
            return self.strategy.validate_status_update(new, current)
        problems = self._validate_meta(new, current)
        if subresource:
            return problems + self.strategy.validate_subresource_update(subresource, new,
                                                                        current)
        return problems + self.strategy.validate_update(new, current)

    # -- delete ----------------------------------------------------------------------------

    @etcd_errors
    async def delete(self, namespace: str, name: str, options: DeleteOptions) -> tuple[Obj, bool]:
        """Delete: returns (object, gone). Not gone while grace or finalizers hold it."""
        key = self.key(namespace, name)
        for _ in range(MAX_UPDATE_ATTEMPTS):
            kv = await self.etcd.get(key.encode())
            if kv is None:
                raise self._not_found(name)
            current = decode(kv)
            self._check_preconditions(current, options.preconditions)
            tracing.record_delete(current)
            admission = self.admission.attributes(self.resource, DELETE, namespace, name,
                                                  None, current, dry_run=options.dry_run)
            await self.admission.admit(admission)
            await self.admission.validate(admission)
            marked = self._mark_for_deletion(copy.deepcopy(current), options)
            if options.dry_run:
                return marked or current, marked is None
            try:
                if marked is not None:
                    if encode(marked) == encode(current):
                        return current, False
                    revision = await self.etcd.update(key.encode(), encode(marked), kv.mod_revision)
                    marked["metadata"]["resourceVersion"] = str(revision)
                    return marked, False
                await self.etcd.delete(key.encode(), kv.mod_revision)
            except RevisionMismatch:
                continue
            return current, True
        raise self._conflict(name)

    def _check_preconditions(self, current: Obj, preconditions: dict[str, Any]) -> None:
        metadata = current["metadata"]
        uid = preconditions.get("uid")
        if uid and uid != metadata.get("uid"):
            raise errors.conflict(
                self.resource.plural, self.resource.group, metadata["name"],
                f"Precondition failed: UID in precondition: {uid}, "
                f"UID in object meta: {metadata.get('uid')}",
            )
        version = preconditions.get("resourceVersion")
        if version and version != metadata.get("resourceVersion"):
            raise errors.conflict(
                self.resource.plural, self.resource.group, metadata["name"],
                f"Precondition failed: ResourceVersion in precondition: {version}, "
                f"ResourceVersion in object meta: {metadata.get('resourceVersion')}",
            )

    def _mark_for_deletion(self, obj: Obj, options: DeleteOptions) -> Obj | None:
        """Graceful deletion and finalizers: the object to write, or None to remove it now."""
        metadata = obj["metadata"]
        finalizers = list(metadata.get("finalizers") or [])
        wanted = deletion_finalizers(finalizers, options.propagation_policy,
                                     self.strategy.default_garbage_collection_policy)
        if wanted != finalizers:
            metadata["finalizers"] = wanted
            if not wanted:
                metadata.pop("finalizers")
        grace = self.strategy.graceful_delete_seconds(obj, options.grace_period_seconds)
        already = metadata.get("deletionTimestamp")
        now = meta.now()
        if grace is not None and grace > 0:
            current_grace = metadata.get("deletionGracePeriodSeconds")
            if not already or current_grace is None or grace < current_grace:
                metadata["deletionTimestamp"] = meta.rfc3339(now + timedelta(seconds=grace))
                metadata["deletionGracePeriodSeconds"] = grace
            self.strategy.prepare_for_delete(obj)
            return obj
        if self.strategy.blocks_deletion(obj):
            if not already:
                metadata["deletionTimestamp"] = meta.rfc3339(now)
            metadata["deletionGracePeriodSeconds"] = 0
            self.strategy.prepare_for_delete(obj)
            return obj
        return None
