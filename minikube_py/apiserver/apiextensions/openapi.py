"""A definition's schema published in OpenAPI, so that `kubectl explain` describes custom
resources as it does built-in kinds (upstream's pkg/controller/openapi/builder).

Each served version becomes the definition `<reversed group>.<version>.<Kind>` (e.g.
com.example.stable.v1.CronTab) with x-kubernetes-group-version-kind, its metadata a
reference to ObjectMeta, and a `<Kind>List`. The v3 documents are one per
group-version (/openapi/v3/apis/<group>/<version>); v2 adds the same definitions to
/openapi/v2's JSON form.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from minikube_py.api import Obj
from minikube_py.api.schema.openapi import REF_V2, standard_definitions
from minikube_py.api.schema.paths import REF_V3

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"


def definition_name(group: str, version: str, kind: str) -> str:
    """The OpenAPI definition name of a custom kind: the group's labels reversed."""
    return ".".join([*reversed(group.split(".")), version, kind])


def _ref(ref: str, name: str, description: str, v3: bool) -> Obj:
    if v3:
        return {"allOf": [{"$ref": ref + name}], "description": description}
    return {"$ref": ref + name, "description": description}


_V2_UNSUPPORTED = ("allOf", "oneOf", "anyOf", "not")


def structural_v2(schema: Obj) -> Obj:
    """A schema as OpenAPI v2 can carry it for kubectl (upstream's
    ToStructuralOpenAPIV2): no allOf/oneOf/anyOf/not; a nullable node untyped and without
    properties or items, and left out of its parent's required; a node preserving unknown
    fields without properties or items; an array without items untyped. Nodes that
    need none of this are the input's own, not copies."""
    out = schema
    if any(key in schema for key in _V2_UNSUPPORTED):
        out = {k: v for k, v in schema.items() if k not in _V2_UNSUPPORTED}
    if out.get("nullable"):
        out = {k: v for k, v in out.items()
               if k not in ("type", "nullable", "items", "properties")}
    if out.get("x-kubernetes-preserve-unknown-fields"):
        out = {k: v for k, v in out.items() if k not in ("items", "properties")}
    if out.get("type") == "array" and "items" not in out:
        out = {k: v for k, v in out.items() if k != "type"}
    properties = out.get("properties")
    if properties:
        converted = {name: structural_v2(p) for name, p in properties.items()}
        nullable = {name for name, p in properties.items() if p.get("nullable")}
        required = [name for name in out.get("required") or () if name not in nullable]
        if nullable or any(converted[n] is not properties[n] for n in properties):
            out = dict(out, properties=converted)
            if "required" in out:
                out["required"] = required
            if not required:
                out.pop("required", None)
    for key in ("items", "additionalProperties"):
        child = out.get(key)
        if isinstance(child, dict):
            converted_child = structural_v2(child)
            if converted_child is not child:
                out = dict(out, **{key: converted_child})
    return out


def kind_definitions(crd: Obj, version: Obj, v3: bool) -> dict[str, Obj]:
    """The definitions of one served version: the kind and its list. In v2 a schema
    preserving unknown fields at its root is `type: object` alone: kubectl's v2
    validation would refuse any field beside the properties it were given."""
    spec, names = crd["spec"], crd["status"]["acceptedNames"]
    group, kind = spec["group"], names["kind"]
    ref = REF_V3 if v3 else REF_V2
    name = definition_name(group, version["name"], kind)
    # only the top level and its properties change: copies of those two leave the
    # definition's own schema as it is without deep-copying megabytes of it
    schema = dict(version["schema"]["openAPIV3Schema"])
    preserve_root = not v3 and schema.get("x-kubernetes-preserve-unknown-fields")
    if not v3:
        schema = dict(structural_v2(schema))
    properties = schema["properties"] = dict(schema.get("properties") or {})
    properties["apiVersion"] = {"type": "string", "description": (
        "APIVersion defines the versioned schema of this representation of an object.")}
    properties["kind"] = {"type": "string", "description": (
        "Kind is a string value representing the REST resource this object represents.")}
    properties["metadata"] = _ref(ref, OBJECT_META, "Standard object's metadata.", v3)
    schema["type"] = "object"
    gvk = {"group": group, "kind": kind, "version": version["name"]}
    if preserve_root:
        schema = {"type": "object"}
    schema["x-kubernetes-group-version-kind"] = [gvk]
    list_kind = names.get("listKind") or f"{kind}List"
    items: Obj = {"type": "array", "items": {"$ref": ref + name},
                  "description": f"List of {names['plural']}."}
    return {
        name: schema,
        definition_name(group, version["name"], list_kind): {
            "type": "object",
            "description": f"{list_kind} is a list of {kind}",
            "required": ["items"],
            "properties": {
                "apiVersion": properties["apiVersion"],
                "items": items,
                "kind": properties["kind"],
                "metadata": _ref(ref, LIST_META, "Standard list metadata.", v3),
            },
            "x-kubernetes-group-version-kind": [gvk | {"kind": list_kind}],
        },
    }


def kind_paths(crd: Obj, version: Obj) -> dict[str, Obj]:
    """The collection and object paths of one served version, each with its read
    operation (kubectl explain finds a resource's kind by these)."""
    spec, names = crd["spec"], crd["status"]["acceptedNames"]
    group, kind, plural = spec["group"], names["kind"], names["plural"]
    base = f"/apis/{group}/{version['name']}"
    if spec["scope"] == "Namespaced":
        base += "/namespaces/{namespace}"
    gvk = {"group": group, "kind": kind, "version": version["name"]}
    name = definition_name(group, version["name"], kind)
    list_name = definition_name(group, version["name"], names.get("listKind") or kind + "List")

    def read(action: str, definition: str) -> Obj:
        return {"get": {
            "description": f"{action} objects of kind {kind}" if action == "list" else (
                f"read the specified {kind}"),
            "operationId": f"{action}{kind}",
            "responses": {"200": {"description": "OK", "content": {"application/json": {
                "schema": {"$ref": REF_V3 + definition}}}}},
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        }}

    return {f"{base}/{plural}": read("list", list_name),
            f"{base}/{plural}/{{name}}": read("get", name)}


class Published:
    """The OpenAPI of every Established definition, rebuilt when one changes. The
    documents are built when they are first read after a rebuild: serializing a
    group-version's document walks every schema in it, and definitions change on each
    status write."""

    def __init__(self) -> None:
        # kind_definitions of each served version by (uid, resourceVersion, version, v3):
        # a rebuild copies only the schemas of definitions that changed, not every one
        self._definitions: dict[tuple[str, str, str, bool], dict[str, Obj]] = {}
        # what /openapi/v2 publishes, built when it is first read after a rebuild: its
        # conversion walks every schema
        self._sources: list[tuple[tuple[str, str, str, bool], Obj, Obj]] = []
        self._v2: dict[str, Any] | None = {}
        self._v3: tuple[dict[str, bytes], dict[str, Any]] | None = ({}, {})

    def _definitions_of(self, key: tuple[str, str, str, bool], crd: Obj, version: Obj
                        ) -> dict[str, Obj]:
        found = self._definitions.get(key)
        if found is None:
            found = self._definitions[key] = kind_definitions(crd, version, key[3])
        return found

    @property
    def v2_definitions(self) -> dict[str, Any]:
        """The served versions' v2 definitions, with the standard ones they refer to."""
        if self._v2 is None:
            v2: dict[str, Any] = {}
            for key, crd, version in self._sources:
                v2.update(self._definitions_of(key, crd, version))
            self._v2 = (standard_definitions(v3=False) | v2) if v2 else {}
        return self._v2

    @property
    def v3_documents(self) -> dict[str, bytes]:
        """The v3 document of each group-version by its path (apis/<group>/<version>)."""
        return self._v3_built()[0]

    @property
    def v3_paths(self) -> dict[str, Any]:
        """/openapi/v3's entry of each group-version: its document's URL with its hash."""
        return self._v3_built()[1]

    def _v3_built(self) -> tuple[dict[str, bytes], dict[str, Any]]:
        if self._v3 is None:
            v3: dict[tuple[str, str], dict[str, Any]] = {}
            v3_paths: dict[tuple[str, str], dict[str, Any]] = {}
            for (uid, resource_version, name, _), crd, version in self._sources:
                group_version = (crd["spec"]["group"], name)
                v3.setdefault(group_version, {}).update(self._definitions_of(
                    (uid, resource_version, name, True), crd, version))
                v3_paths.setdefault(group_version, {}).update(kind_paths(crd, version))
            documents: dict[str, bytes] = {}
            paths: dict[str, Any] = {}
            for (group, version_name), schemas in sorted(v3.items()):
                path = f"apis/{group}/{version_name}"
                body = orjson.dumps({
                    "openapi": "3.0.0",
                    "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
                    "paths": dict(sorted(v3_paths[(group, version_name)].items())),
                    "components": {"schemas": standard_definitions(v3=True) | schemas},
                })
                documents[path] = body
                digest = hashlib.sha512(body).hexdigest()[:32].upper()
                paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
            self._v3 = (documents, paths)
        return self._v3

    def rebuild(self, crds: list[Obj]) -> None:
        """Note the served versions of `crds`; what was built of definitions still
        served at the same resourceVersion is kept."""
        sources: list[tuple[tuple[str, str, str, bool], Obj, Obj]] = []
        for crd in crds:
            metadata = crd["metadata"]
            for version in crd["spec"]["versions"]:
                if version.get("served"):
                    sources.append(((metadata["uid"], metadata["resourceVersion"],
                                     version["name"], False), crd, version))
        kept = {(uid, rv, name) for (uid, rv, name, _), _, _ in sources}
        self._definitions = {key: value for key, value in self._definitions.items()
                             if key[:3] in kept}
        self._sources, self._v2, self._v3 = sources, None, None
