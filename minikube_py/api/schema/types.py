"""The shape of API types: what fields an object may have and how patches merge them.

One small description of each built-in type serves four readers:
- the API server's `fieldValidation` (Strict/Warn) finds unknown fields with it,
- strategic merge patch reads `patch_strategy` / `patch_merge_key` from it
  (upstream keeps these in Go struct tags such as
  `patchStrategy:"merge" patchMergeKey:"name"`),
- server-side apply reads `list_type` / `list_map_keys`, `map_type` and key defaults
  from it (upstream's `+listType`, `+structType` / `+mapType` and `+default` markers),
- `/openapi/v3` renders it, so `kubectl explain` can describe fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

TypeKind = Literal[
    "object",  # fixed set of named fields (a Go struct)
    "map",  # free string keys, values of `items` (map[string]T)
    "array",  # list of `items`
    "string",
    "integer",
    "number",
    "boolean",
    "int-or-string",  # intstr.IntOrString, e.g. targetPort, maxSurge
    "quantity",  # resource.Quantity, e.g. "500m", "1Gi"
    "any",  # arbitrary JSON (x-kubernetes-preserve-unknown-fields)
]


@dataclass
class Field:
    """One field of an object type, named as on the wire (camelCase)."""

    type: Type
    description: str = ""
    required: bool = False
    # Strategic merge patch directives, as upstream's struct tags:
    # "merge" (lists merged by patch_merge_key, or maps merged), "replace",
    # "retainKeys", or "merge,retainKeys".
    patch_strategy: str | None = None
    patch_merge_key: str | None = None
    # x-kubernetes-list-type: "atomic", "set" or "map" (with list_map_keys).
    list_type: str | None = None
    list_map_keys: tuple[str, ...] = ()
    # The value the server defaults an omitted field to, where server-side apply needs
    # it: a list-map key such as a port's `protocol` ("TCP") names the item even when
    # the applied configuration leaves it out.
    default: Any = None


@dataclass
class Type:
    """A type: an object with fields, a map, an array, or a scalar."""

    kind: TypeKind
    # OpenAPI definition name for object types, e.g. "io.k8s.api.core.v1.PodSpec".
    name: str = ""
    description: str = ""
    fields: dict[str, Field] = field(default_factory=dict)
    # Element type of an array, value type of a map.
    items: Type | None = None
    # True where any extra field is allowed (unknown fields are not reported below it).
    preserve_unknown: bool = False
    # x-kubernetes-map-type of an object or map: "atomic" when server-side apply owns
    # and replaces it as a whole (a LabelSelector, a Service's selector); None: granular.
    map_type: str | None = None
