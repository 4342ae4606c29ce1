"""The per-resource hooks the generic store calls (upstream's registry strategies).

The generic store (`registry/store.py`) runs the same steps for every resource; a `Strategy`
supplies the few that differ by kind. Each hook has one job:

  create:  prepare_for_create -> default -> validate            -> etcd Txn
  update:  prepare_for_update -> default -> validate_update     -> etcd Txn
  status:  prepare_for_status_update    -> validate_status_update -> etcd Txn
  another writable subresource (pods/ephemeralcontainers):
           prepare_for_subresource_update -> default -> validate_subresource_update
  delete:  graceful_delete_seconds -> blocks_deletion? -> prepare_for_delete (kept, marked)

Around them, to_internal turns a request body into the stored form and to_external a
stored object into what clients read; `reset_fields` tells server-side apply which
fields each of those writes resets.

Hooks mutate the object in place and never talk to storage. Metadata (name, labels,
annotations, ownerReferences...) is validated by the store for every kind, so a
strategy validates only its own spec and status.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from minikube_py.api import Obj
from minikube_py.api.managedfields.fieldpath import FieldSet, field_element
from minikube_py.api.resources import Resource
from minikube_py.api.schema import schema_for
from minikube_py.api.selectors import label_selector_to_string
from minikube_py.api.validation import FieldError, validate_dns1123_subdomain

if TYPE_CHECKING:
    from minikube_py.apiserver.endpoints.tables.table import Printer


def spec_changed(new: Obj, old: Obj) -> bool:
    """True when anything outside metadata and status differs (what bumps generation)."""
    ignored = ("metadata", "status", "apiVersion", "kind")
    keys = (set(new) | set(old)) - set(ignored)
    return any(new.get(k) != old.get(k) for k in keys)


class Strategy:
    """Defaults shared by every resource; subclasses override what their kind needs."""

    # DefaultGarbageCollectionPolicy: what a delete without propagationPolicy does to the
    # object's dependents. "DeleteDependents" (background), "OrphanDependents" (the
    # server adds the `orphan` finalizer), or "Unsupported" (no GC finalizers at all).
    default_garbage_collection_policy: ClassVar[str] = "DeleteDependents"
    # The (apiVersion, kind) whose shape the store keeps, when it is not the resource's own
    # (events.k8s.io/v1 Events are stored as core/v1 Events): the store fills in that
    # kind's always-written fields.
    storage_kind: ClassVar[tuple[str, str] | None] = None
    # The rule the store checks metadata.name with (upstream's NameFunc): a DNS-1123
    # subdomain unless the kind says otherwise (StatefulSets: a label; Events: a path).
    name_validator: Callable[[str], list[str]] = staticmethod(validate_dns1123_subdomain)
    # Whether clients see the stored bytes as they are: then lists and watches send them
    # without decoding (store.wire_json). False when to_external converts.
    stored_is_external: ClassVar[bool] = True
    # Whether convert_from_storage calls out: then a watch converts each batch of events
    # before it writes them, never straight from the watch cache.
    converts_remotely: ClassVar[bool] = False
    # Whether a field selector must see the served version of an object, which only a
    # call out converts to: then lists and watches select after converting.
    selects_after_conversion: ClassVar[bool] = False
    # ReturnDeletedObject: a DELETE that removes the object at once answers with the
    # object instead of a Status (upstream's pods, services and namespaces do).
    return_deleted_object: ClassVar[bool] = False
    # The subresource of another resource that a POST to this resource's collection
    # stands for, when the kind has no storage of its own (upstream's LegacyBinding:
    # POST .../bindings binds the pod the body names, as pods/<name>/binding does).
    collection_is_subresource: ClassVar[str] = ""
    # The patch types PATCH accepts (415 for others): a kind without Go struct tags (a
    # custom resource) has no strategic merge patch.
    patch_types: ClassVar[tuple[str, ...]] = (
        "application/json-patch+json", "application/merge-patch+json",
        "application/strategic-merge-patch+json", "application/apply-patch+yaml")

    def __init__(self, resource: Resource) -> None:
        self.resource = resource
        self.has_status = "status" in resource.subresources
        # The Table columns of a kind whose columns are data (a custom resource's
        # additionalPrinterColumns); None: the built-in printer of endpoints/tables/.
        self.printer: Printer | None = None

    def to_internal(self, obj: Obj) -> Obj:
        """Convert a decoded request body to the stored form, before any other hook runs.
        Must not default or validate: the hooks after it do."""
        return obj

    def to_external(self, obj: Obj) -> Obj:
        """Convert a stored object to the form clients of this resource read. Must not
        change the stored object."""
        return obj

    async def convert_to_storage(self, obj: Obj) -> Obj:
        """An object in the storage version, when that takes a call out (a custom
        resource's conversion webhook): the store's last step before etcd."""
        return obj

    async def convert_from_storage(self, objs: list[Obj], *, is_list: bool = False
                                   ) -> list[Obj]:
        """Stored objects in the served version, when that takes a call out: what an
        update starts from, and every answer before to_external. Must not change the
        stored objects."""
        return objs

    def label_selector(self, obj: Obj) -> Obj | None:
        """The object's pod selector as a LabelSelector (the /scale subresource's
        status.selector); workloads keep it in spec.selector. Must not change `obj`."""
        selector = (obj.get("spec") or {}).get("selector")
        return selector if isinstance(selector, dict) else None

    def scale_of(self, obj: Obj) -> tuple[int, int, str | None]:
        """The /scale subresource's view of the object: desired replicas, observed
        replicas, and the selector as a string (None: no selector). Must not change `obj`."""
        selector = self.label_selector(obj)
        return ((obj.get("spec") or {}).get("replicas", 0),
                (obj.get("status") or {}).get("replicas", 0),
                label_selector_to_string(selector) if isinstance(selector, dict) else None)

    def set_scale_replicas(self, obj: Obj, replicas: int) -> None:
        """A /scale write: the desired replicas, where the kind keeps them."""
        obj.setdefault("spec", {})["replicas"] = replicas

    def prepare_for_create(self, obj: Obj) -> None:
        """Before create: a client may not set status; generation starts at 1.

        Must not validate (validate runs after default, on the whole result) and must not
        fail: it only clears what a client may not set."""
        if self.has_status:
            obj.pop("status", None)
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Before update of the main resource: keep status, bump generation on spec change.

        Must not validate (validate_update does, afterwards) and must not change `old`."""
        if self.has_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        generation = old["metadata"].get("generation", 1)
        new["metadata"]["generation"] = generation + 1 if spec_changed(new, old) else generation

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """Before a /status write: everything but status comes from the stored object.

        managedFields stay the write's own: the field manager records this write in them.
        Must not validate (validate_status_update does) and must not change `old`.
        """
        status = new.get("status")
        resource_version = new["metadata"].get("resourceVersion")
        managed_fields = new["metadata"].get("managedFields")
        new.clear()
        new.update(copy.deepcopy(old))
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = status
        if resource_version is not None:
            new["metadata"]["resourceVersion"] = resource_version
        new["metadata"].pop("managedFields", None)
        if managed_fields is not None:
            new["metadata"]["managedFields"] = managed_fields

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj) -> None:
        """Before a write through a subresource other than status and scale (pods have
        one: ephemeralcontainers). A kind that declares none has nothing writable there:
        everything stays as stored (only the write's resourceVersion, its precondition,
        is kept). Must not validate and must not change `old`."""
        resource_version = new["metadata"].get("resourceVersion")
        new.clear()
        new.update(copy.deepcopy(old))
        if resource_version is not None:
            new["metadata"]["resourceVersion"] = resource_version

    def validate_subresource_update(self, subresource: str, new: Obj, old: Obj
                                    ) -> list[FieldError]:
        """Validation of a write through that subresource: by default the kind's own
        update rules."""
        return self.validate_update(new, old)

    def reset_fields(self) -> dict[str, FieldSet]:
        """GetResetFields: by subresource ("" for the main resource), the fields its writes
        reset, which server-side apply never records as owned: status on the main
        resource, everything but status on /status."""
        if not self.has_status:
            return {}
        resource = self.resource
        schema = schema_for(resource.group, resource.version, resource.kind)
        top_level = schema.fields if schema is not None else ("metadata", "spec")
        return {
            "": FieldSet.of((field_element("status"),)),
            "status": FieldSet.of(*((field_element(name),) for name in top_level
                                    if name != "status")),
        }

    def prune_unknown_fields(self, obj: Obj) -> list[str] | None:
        """Decoding, for a kind whose schema is data (a custom resource): drop the fields
        the schema does not know and return their paths. None for a built-in kind: its
        Go-shaped schema (api/schema) is checked by the handler's strict decoding."""
        return None

    def default(self, obj: Obj) -> None:
        """Fill in fields a client may omit (runs on create and on every update). Must not
        reject anything: an invalid value is left for validate to report."""

    def validate(self, obj: Obj) -> list[FieldError]:
        """Kind-specific validation of a new object, one FieldError per problem. Must not
        change the object (defaulting is done), and must not check metadata: the store
        does that for every kind."""
        return []

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """Validation of an update: the rules for new objects plus immutable fields. Must
        not change either object."""
        return self.validate(new)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """Validation of a /status write. Must not change either object, and must not look
        at the spec: a /status write cannot change it."""
        return []

    @functools.cached_property
    def field_labels(self) -> frozenset[str]:
        """The names a fieldSelector may use for this kind (the keys of field_set)."""
        return frozenset(self.field_set({"metadata": {}, "spec": {}, "status": {}}))

    def field_set(self, obj: Obj) -> dict[str, str]:
        """The fields a fieldSelector may name for this kind, with their values (upstream's
        GetAttrs). Runs for every object a selective list or watch looks at: must not
        change the object, and must stay cheap."""
        metadata = obj.get("metadata") or {}
        fields = {"metadata.name": metadata.get("name", "")}
        if self.resource.namespaced:
            fields["metadata.namespace"] = metadata.get("namespace", "")
        return fields

    def graceful_delete_seconds(self, obj: Obj, requested: int | None) -> int | None:
        """Delete: the grace period to wait before removal (None or 0: remove at once).

        Runs on every DELETE, before the store decides to mark or remove, with the
        request's gracePeriodSeconds (None when it gave none). Must not change the
        object: marking it is the store's and prepare_for_delete's. Only kinds with
        graceful deletion (pods) override this; the rest go at once.
        """
        return None

    def blocks_deletion(self, obj: Obj) -> bool:
        """Delete: True while something must finish first (finalizers).

        Runs on a DELETE and after every update of an object being deleted: the object
        goes with the write that makes this False. Must not change the object.
        """
        return bool(obj["metadata"].get("finalizers"))

    def prepare_for_delete(self, obj: Obj) -> None:
        """Delete: runs when the object is marked with a deletionTimestamp but kept (grace
        period or finalizers), on the copy about to be written. Must not fail and must not
        touch metadata: the store has set the deletion fields and finalizers."""


class KindStrategy(Strategy):
    """A built-in kind: the base hooks.

    `metadata.generation` is kept as the base class does (1 at create, one more for
    every change outside metadata and status), as upstream does for pods and workloads.
    """


class NoGenerationStrategy(KindStrategy):
    """A kind whose upstream strategy never sets metadata.generation (most of core/v1).

    A client can not set the generation either: an update keeps the stored one.
    """

    def prepare_for_create(self, obj: Obj) -> None:
        if self.has_status:
            obj.pop("status", None)
        obj["metadata"].pop("generation", None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if self.has_status:
            keep_stored_status(new, old)
        keep_stored_generation(new, old)


def keep_stored_status(new: Obj, old: Obj) -> None:
    """An update of the main resource may not write status (only /status may)."""
    if "status" in old:
        new["status"] = copy.deepcopy(old["status"])
    else:
        new.pop("status", None)


def keep_stored_generation(new: Obj, old: Obj) -> None:
    generation = old["metadata"].get("generation")
    if generation is None:
        new["metadata"].pop("generation", None)
    else:
        new["metadata"]["generation"] = generation


def bump_generation(new: Obj, old: Obj) -> None:
    """metadata.generation: one more than the stored object's."""
    new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1


def bump_generation_if_metadata_changed(new: Obj, old: Obj, field: str) -> None:
    """A change of metadata.<field> is a new generation too (if the spec did not bump it)."""
    unchanged = new["metadata"]["generation"] == old["metadata"].get("generation", 1)
    if unchanged and _as_dict(new["metadata"].get(field)) != _as_dict(old["metadata"].get(field)):
        bump_generation(new, old)


def _as_dict(value: object) -> Obj:
    return value if isinstance(value, dict) else {}
