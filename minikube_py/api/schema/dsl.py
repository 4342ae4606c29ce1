"""A tiny vocabulary for writing API types so that a schema file reads like the API reference.

    CONTAINER_PORT = obj(
        "io.k8s.api.core.v1.ContainerPort", "A network port in a single container.",
        containerPort=f(INTEGER, "Port number on the pod's IP address.", required=True),
        protocol=f(STRING, "TCP, UDP or SCTP; defaults to TCP."),
    )
    ports=merged(CONTAINER_PORT, "Ports to expose.", key="containerPort",
                 map_keys=("containerPort", "protocol"))

`merged` and `atomic` spell out what upstream writes as struct tags and comment markers
(`patchStrategy:"merge" patchMergeKey:"name"`, `+listType=map`, `+listMapKey=name`);
`atomic_struct` and `atomic_map` are `+structType=atomic` and `+mapType=atomic`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from minikube_py.api.schema.types import Field, Type

STRING = Type(kind="string")
INTEGER = Type(kind="integer")
NUMBER = Type(kind="number")
BOOLEAN = Type(kind="boolean")

QUANTITY = Type(
    kind="quantity",
    name="io.k8s.apimachinery.pkg.api.resource.Quantity",
    description="A fixed-point number with an optional suffix, such as 500m, 2 or 1Gi.",
)
INT_OR_STRING = Type(
    kind="int-or-string",
    name="io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    description="Either an integer or a string, such as 8080, 25% or http.",
)
# Arbitrary JSON: fields below it are kept as sent and never reported as unknown.
ANY = Type(kind="any", preserve_unknown=True)


def array(items: Type) -> Type:
    """A JSON array of `items` (a Go slice)."""
    return Type(kind="array", items=items)


def map_of(values: Type) -> Type:
    """A JSON object with free string keys and `values` (a Go map[string]T)."""
    return Type(kind="map", items=values)


STRING_MAP = map_of(STRING)
QUANTITY_MAP = map_of(QUANTITY)


def atomic_struct(schema: Type) -> Type:
    """`+structType=atomic`: server-side apply owns and replaces the object as a whole."""
    return dataclasses.replace(schema, map_type="atomic")


def atomic_map(values: Type) -> Type:
    """`+mapType=atomic`: a map server-side apply owns and replaces as a whole."""
    return Type(kind="map", items=values, map_type="atomic")


def f(
    type_: Type,
    description: str = "",
    *,
    required: bool = False,
    strategy: str | None = None,
    merge_key: str | None = None,
    list_type: str | None = None,
    map_keys: tuple[str, ...] = (),
    default: Any = None,
) -> Field:
    """A field, with upstream's patch strategy, list type and default where it has them."""
    return Field(
        type=type_,
        description=description,
        required=required,
        patch_strategy=strategy,
        patch_merge_key=merge_key,
        list_type=list_type,
        list_map_keys=map_keys,
        default=default,
    )


def atomic(items: Type, description: str = "", *, required: bool = False) -> Field:
    """A list replaced as a whole by patches (`+listType=atomic`)."""
    return f(array(items), description, required=required, list_type="atomic")


def set_of(items: Type, description: str = "", *, strategy: str | None = None) -> Field:
    """A list of unique scalars (`+listType=set`)."""
    return f(array(items), description, strategy=strategy, list_type="set")


def merged(
    items: Type,
    description: str,
    *,
    key: str,
    map_keys: tuple[str, ...] | None = None,
    strategy: str = "merge",
    list_type: str = "map",
    required: bool = False,
) -> Field:
    """A list that strategic merge patch merges item by item, matching items by `key`.

    Most such lists are also `+listType=map` keyed by the same field; `map_keys` and
    `list_type` say where upstream differs (Service ports are keyed by port and protocol,
    pod hostIPs are merged by ip but atomic for server-side apply).
    """
    return f(
        array(items),
        description,
        required=required,
        strategy=strategy,
        merge_key=key,
        list_type=list_type,
        map_keys=(map_keys or (key,)) if list_type == "map" else (),
    )


def obj(name: str, description: str, /, **fields: Field) -> Type:
    """An object type (a Go struct) named as its OpenAPI definition.

    Field names are the JSON names; a trailing underscore is dropped so that Python
    keywords can be fields (`continue_=` is the field "continue").
    """
    return Type(
        kind="object",
        name=name,
        description=description,
        fields={key.removesuffix("_"): value for key, value in fields.items()},
    )
