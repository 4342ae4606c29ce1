"""The strategy of a custom resource: its CRD version's schema defaults, prunes and
validates it (upstream's customresource strategy, pkg/registry/customresource/strategy.go
and validator.go)."""

from __future__ import annotations

import copy
import functools
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.managedfields.fieldpath import FieldSet, field_element
from minikube_py.api.managedfields.merge import MissingVersion
from minikube_py.api.openapi_schema.compiled import Node, compile_schema
from minikube_py.api.openapi_schema.defaulting import apply_defaults
from minikube_py.api.openapi_schema.pruning import prune
from minikube_py.api.openapi_schema.validation import validate
from minikube_py.api.resources import Resource
from minikube_py.api.schema.types import Type
from minikube_py.api.validation import FieldError
from minikube_py.apiserver.apiextensions.conversion import WebhookConverter
from minikube_py.apiserver.apiextensions.schema_type import schema_type
from minikube_py.apiserver.registry.strategies.base import Strategy, bump_generation

# What a write of the main resource never changes on its own: generation counts the rest.
_NOT_SPEC = ("metadata", "status")


class CustomResourceVersions:
    """Field management's view of a definition's versions (every one in its spec, served
    or not, as upstream's type converter has a model of each): the schema of each as a
    Type, built on first use, and an object converted by the definition's strategy."""

    def __init__(self, crd: Obj, converter: WebhookConverter | None) -> None:
        group = crd["spec"]["group"]
        self._schemas = {f"{group}/{version['name']}":
                         (version.get("schema") or {}).get("openAPIV3Schema") or {}
                         for version in crd["spec"]["versions"]}
        self._types: dict[str, Type] = {}
        self.converter = converter

    def schema(self, api_version: str) -> Type:
        if api_version not in self._schemas:
            raise MissingVersion(api_version)
        found = self._types.get(api_version)
        if found is None:
            found = self._types[api_version] = schema_type(self._schemas[api_version])
        return found

    async def convert(self, obj: Obj, api_version: str) -> Obj:
        """Conversion None changes the apiVersion alone; Webhook asks the webhook."""
        if api_version not in self._schemas:
            raise MissingVersion(api_version)
        if obj.get("apiVersion") == api_version:
            return obj
        if self.converter is None:
            return {**obj, "apiVersion": api_version}
        return (await self.converter.convert([obj], api_version))[0]


class CustomResourceStrategy(Strategy):
    """A custom resource of one served version: `node` is its compiled schema, `schema`
    the same as a Type (for server-side apply). Both are built from the version's
    openAPIV3Schema on first use, as upstream builds a version's serving info on its
    first request (the crdHandler's getOrCreateServingInfoFor), not when the definition
    is established."""

    patch_types = ("application/json-patch+json", "application/merge-patch+json",
                   "application/apply-patch+yaml")

    def __init__(self, resource: Resource, openapi_schema: dict[str, Any], api_version: str,
                 storage_api_version: str, scale: Obj | None = None,
                 selectable_fields: list[Obj] | None = None,
                 converter: WebhookConverter | None = None) -> None:
        super().__init__(resource)
        self.scale = scale or {}
        # selectableFields: the field selector names them without the leading dot
        self.selectable = [str(field.get("jsonPath", "")).lstrip(".")
                           for field in selectable_fields or [] if field.get("jsonPath")]
        self.openapi_schema = openapi_schema
        self.api_version = api_version
        self.storage_api_version = storage_api_version
        # Conversion Webhook: the store converts what it writes and reads (stored objects
        # may be of any version), so every other hook sees the served version.
        self.converter = converter
        self.converts_remotely = converter is not None
        # a selectable field of this version may not exist in the stored one
        self.selects_after_conversion = converter is not None and bool(self.selectable)

    @functools.cached_property
    def node(self) -> Node:
        return compile_schema(self.openapi_schema)

    @functools.cached_property
    def schema(self) -> Type:
        return schema_type(self.openapi_schema)

    @functools.cached_property
    def defaults_on_read(self) -> bool:
        """Objects read from storage are defaulted too (a default added to the schema
        later shows in every read)."""
        return _has_default(self.openapi_schema)

    @functools.cached_property
    def stored_is_external(self) -> bool:  # type: ignore[override]
        """Only a schema without defaults serves the stored bytes as they are."""
        return (self.api_version == self.storage_api_version
                and not self.defaults_on_read and self.converter is None)

    def to_internal(self, obj: Obj) -> Obj:
        """Conversion None: the stored version is the object with the storage apiVersion
        (conversion Webhook: convert_to_storage's call does it)."""
        if self.converter is None and self.api_version != self.storage_api_version:
            obj["apiVersion"] = self.storage_api_version
        return obj

    def to_external(self, obj: Obj) -> Obj:
        """Conversion None to the served version, and the schema's defaults applied
        (upstream defaults what it decodes from etcd as well as requests)."""
        if self.defaults_on_read:
            obj = copy.deepcopy(obj)
            apply_defaults(self.node, obj)
        if self.converter is not None or self.api_version == self.storage_api_version:
            return obj
        return {**obj, "apiVersion": self.api_version}

    async def convert_to_storage(self, obj: Obj) -> Obj:
        """Conversion Webhook: the request's object, converted to the storage version."""
        if self.converter is None:
            return obj
        return (await self.converter.convert([obj], self.storage_api_version))[0]

    async def convert_from_storage(self, objs: list[Obj], *, is_list: bool = False
                                   ) -> list[Obj]:
        """Conversion Webhook: stored objects (of any version), in the served one."""
        if self.converter is None:
            return objs
        return await self.converter.convert(objs, self.api_version, is_list=is_list)

    def prune_unknown_fields(self, obj: Obj) -> list[str] | None:
        """Decoding: the fields the schema does not know, dropped (pruning)."""
        return prune(obj, self.node)

    def prepare_for_create(self, obj: Obj) -> None:
        if self.has_status:
            obj.pop("status", None)
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """With a status subresource status is kept; generation counts every change
        outside metadata (and status, when it has its own subresource)."""
        ignored = _NOT_SPEC if self.has_status else ("metadata",)
        if self.has_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        new["metadata"]["generation"] = old["metadata"].get("generation", 1)
        if any(new.get(k) != old.get(k) for k in (set(new) | set(old)) - set(ignored)):
            bump_generation(new, old)

    def default(self, obj: Obj) -> None:
        apply_defaults(self.node, obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validate(self.node, obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """The schema, with transition rules seeing `old` as oldSelf and an unchanged
        invalid value ratcheted (not refused again)."""
        return validate(self.node, new, old=old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validate(self.node, new, old=old)

    def field_set(self, obj: Obj) -> dict[str, str]:
        """metadata.name, metadata.namespace and the definition's selectableFields, as a
        field selector compares them (a missing field is the empty string; booleans as
        true/false)."""
        fields = super().field_set(obj)
        for path in self.selectable:
            value = _read(obj, "." + path)
            fields[path] = ("" if value is None else
                            ("true" if value else "false") if isinstance(value, bool)
                            else str(value))
        return fields

    def scale_of(self, obj: Obj) -> tuple[int, int, str | None]:
        """The scale subresource's paths (specReplicasPath, statusReplicasPath,
        labelSelectorPath) read from the object."""
        spec = _read(obj, self.scale.get("specReplicasPath", ""))
        status = _read(obj, self.scale.get("statusReplicasPath", ""))
        selector = _read(obj, self.scale.get("labelSelectorPath", ""))
        return (spec if isinstance(spec, int) else 0, status if isinstance(status, int) else 0,
                selector if isinstance(selector, str) and selector else None)

    def set_scale_replicas(self, obj: Obj, replicas: int) -> None:
        steps = self.scale.get("specReplicasPath", ".spec.replicas").strip(".").split(".")
        target = obj
        for step in steps[:-1]:
            child = target.get(step)
            if not isinstance(child, dict):
                child = target[step] = {}
            target = child
        target[steps[-1]] = replicas

    def reset_fields(self) -> dict[str, FieldSet]:
        if not self.has_status:
            return {}
        return {
            "": FieldSet.of((field_element("status"),)),
            "status": FieldSet.of(*((field_element(name),) for name in _root_fields(
                self.openapi_schema) if name != "status")),
        }


def _read(obj: Obj, path: str) -> object:
    """The value at a simple JSON path such as .status.replicas (None when absent)."""
    value: object = obj
    for step in path.strip(".").split(".") if path else ():
        if not isinstance(value, dict):
            return None
        value = value.get(step)
    return value if path else None


def _root_fields(schema: dict[str, Any]) -> list[str]:
    """The fields of a custom resource's root Type (schema_type's): the schema's
    properties and the standard apiVersion, kind and metadata."""
    return [*(schema.get("properties") or {}), "apiVersion", "kind", "metadata"]


def _has_default(schema: Any) -> bool:
    """Whether any node of the schema has a default."""
    if not isinstance(schema, dict):
        return False
    if "default" in schema:
        return True
    children = [*(schema.get("properties") or {}).values(), schema.get("items"),
                schema.get("additionalProperties"), *(schema.get("allOf") or ()),
                *(schema.get("anyOf") or ()), *(schema.get("oneOf") or ())]
    return any(_has_default(child) for child in children)
