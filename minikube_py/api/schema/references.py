"""core/v1 references from one object to another: ObjectReference, LocalObjectReference and
the typed references.

Upstream: k8s.io/api/core/v1/types.go.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import STRING, atomic_struct, f, obj

CORE = "io.k8s.api.core.v1"

LOCAL_OBJECT_REFERENCE = atomic_struct(obj(
    f"{CORE}.LocalObjectReference",
    "Names an object in the same namespace.",
    name=f(STRING, "Name of the referent."),
))

OBJECT_REFERENCE = atomic_struct(obj(
    f"{CORE}.ObjectReference",
    "A reference to any object, possibly to a field of it.",
    apiVersion=f(STRING, "API version of the referent."),
    fieldPath=f(STRING, "Field of the referent this reference points at, e.g. "
                "spec.containers{name}."),
    kind=f(STRING, "Kind of the referent."),
    name=f(STRING, "Name of the referent."),
    namespace=f(STRING, "Namespace of the referent."),
    resourceVersion=f(STRING, "resourceVersion of the referent this reference was made to."),
    uid=f(STRING, "UID of the referent."),
))

TYPED_LOCAL_OBJECT_REFERENCE = atomic_struct(obj(
    f"{CORE}.TypedLocalObjectReference",
    "Names an object of a given kind in the same namespace.",
    apiGroup=f(STRING, "API group of the referent; empty for the core group."),
    kind=f(STRING, "Kind of the referent.", required=True),
    name=f(STRING, "Name of the referent.", required=True),
))

TYPED_OBJECT_REFERENCE = obj(
    f"{CORE}.TypedObjectReference",
    "Names an object of a given kind, possibly in another namespace.",
    apiGroup=f(STRING, "API group of the referent; empty for the core group."),
    kind=f(STRING, "Kind of the referent.", required=True),
    name=f(STRING, "Name of the referent.", required=True),
    namespace=f(STRING, "Namespace of the referent."),
)
