"""meta/v1 types shared by every kind: ObjectMeta, ListMeta, LabelSelector, Status, Time.

Upstream: k8s.io/apimachinery/pkg/apis/meta/v1/types.go.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import (
    ANY,
    BOOLEAN,
    INTEGER,
    STRING,
    STRING_MAP,
    array,
    atomic,
    atomic_struct,
    f,
    merged,
    obj,
    set_of,
)
from minikube_py.api.schema.types import Field, Type

META = "io.k8s.apimachinery.pkg.apis.meta.v1"

TIME = Type(
    kind="string",
    name=f"{META}.Time",
    description="A timestamp in RFC 3339 form with second precision, e.g. 2024-01-02T15:04:05Z.",
)
MICRO_TIME = Type(
    kind="string",
    name=f"{META}.MicroTime",
    description="A timestamp in RFC 3339 form with microsecond precision.",
)

OWNER_REFERENCE = atomic_struct(obj(
    f"{META}.OwnerReference",
    "Identifies an owning object; the garbage collector deletes dependents of deleted owners.",
    apiVersion=f(STRING, "API version of the owner.", required=True),
    blockOwnerDeletion=f(BOOLEAN, "If true, foreground deletion of the owner waits for this "
                         "dependent to be deleted."),
    controller=f(BOOLEAN, "If true, this owner is the managing controller."),
    kind=f(STRING, "Kind of the owner.", required=True),
    name=f(STRING, "Name of the owner.", required=True),
    uid=f(STRING, "UID of the owner.", required=True),
))

MANAGED_FIELDS_ENTRY = obj(
    f"{META}.ManagedFieldsEntry",
    "The set of fields one manager owns, recorded by server-side apply.",
    apiVersion=f(STRING, "Version of the resource the field set applies to."),
    fieldsType=f(STRING, "Format of fieldsV1; only FieldsV1 exists."),
    fieldsV1=f(ANY, "The owned fields, as a FieldsV1 set."),
    manager=f(STRING, "Name of the workflow managing these fields."),
    operation=f(STRING, "Apply or Update: the kind of request that produced this entry."),
    subresource=f(STRING, "Subresource used for the update, or empty for the main resource."),
    time=f(TIME, "When this entry last changed."),
)

OBJECT_META = obj(
    f"{META}.ObjectMeta",
    "Metadata every persisted object has: name, namespace, labels, owners and bookkeeping.",
    annotations=f(STRING_MAP, "Unstructured key/value data for tools; not used to select."),
    creationTimestamp=f(TIME, "CreationTimestamp is a timestamp of when the server created "
                        "the object. Read-only."),
    deletionGracePeriodSeconds=f(INTEGER, "Seconds the object has to terminate gracefully "
                                 "once deletion started. Read-only."),
    deletionTimestamp=f(TIME, "When the object will be deleted; set by the server when "
                        "deletion is requested. Read-only."),
    finalizers=set_of(STRING, "Keys that must be removed before the object is deleted.",
                      strategy="merge"),
    generateName=f(STRING, "Prefix the server uses to generate a unique name if name is "
                   "empty."),
    generation=f(INTEGER, "Sequence number of the desired state (spec). Read-only."),
    labels=f(STRING_MAP, "Key/value pairs to organize and select objects."),
    managedFields=atomic(MANAGED_FIELDS_ENTRY, "Which manager owns which fields "
                         "(server-side apply)."),
    name=f(STRING, "Name, unique within the namespace for a kind."),
    namespace=f(STRING, "Namespace the object lives in; empty for cluster-scoped kinds."),
    ownerReferences=merged(OWNER_REFERENCE, "Objects this object depends on.", key="uid"),
    resourceVersion=f(STRING, "Opaque version of the object, for optimistic concurrency and "
                      "watches. Read-only."),
    selfLink=f(STRING, "Deprecated and never set."),
    uid=f(STRING, "Unique ID in time and space, set by the server. Read-only."),
)

SHARD_INFO = obj(
    f"{META}.ShardInfo",
    "Which shard of a sharded list response this is.",
    selector=f(STRING, "The shard selector from the request.", required=True),
)

LIST_META = obj(
    f"{META}.ListMeta",
    "Metadata of a list response.",
    continue_=f(STRING, "Token to fetch the next chunk of a limited list."),
    remainingItemCount=f(INTEGER, "Estimated number of items after this chunk."),
    resourceVersion=f(STRING, "Version of the list, to start a watch from."),
    selfLink=f(STRING, "Deprecated and never set."),
    shardInfo=f(SHARD_INFO, "Set when the list was requested for one shard."),
)

LABEL_SELECTOR_REQUIREMENT = obj(
    f"{META}.LabelSelectorRequirement",
    "One label match expression: key, operator and values.",
    key=f(STRING, "The label key.", required=True),
    operator=f(STRING, "In, NotIn, Exists or DoesNotExist.", required=True),
    values=atomic(STRING, "Values for In and NotIn; empty for Exists and DoesNotExist."),
)

LABEL_SELECTOR = atomic_struct(obj(
    f"{META}.LabelSelector",
    "A label query; all of matchLabels and matchExpressions must hold (AND).",
    matchExpressions=atomic(LABEL_SELECTOR_REQUIREMENT, "Set-based requirements."),
    matchLabels=f(STRING_MAP, "Equality requirements: label key equals value."),
))

CONDITION = obj(
    f"{META}.Condition",
    "One aspect of an object's current state (the standard condition shape).",
    lastTransitionTime=f(TIME, "When status last changed.", required=True),
    message=f(STRING, "Human-readable details of the transition.", required=True),
    observedGeneration=f(INTEGER, "metadata.generation the condition was set for."),
    reason=f(STRING, "CamelCase reason for the last transition.", required=True),
    status=f(STRING, "True, False or Unknown.", required=True),
    type=f(STRING, "Type of condition in CamelCase.", required=True),
)

STATUS_CAUSE = obj(
    f"{META}.StatusCause",
    "One cause of an error, often naming the offending field.",
    field=f(STRING, "Path of the field that caused the error, e.g. spec.containers[0].name."),
    message=f(STRING, "Human-readable description of the cause."),
    reason=f(STRING, "Machine-readable cause, e.g. FieldValueInvalid."),
)

STATUS_DETAILS = obj(
    f"{META}.StatusDetails",
    "Extra data about an error: the object it concerns and its causes.",
    causes=atomic(STATUS_CAUSE, "The causes of the error."),
    group=f(STRING, "API group of the object."),
    kind=f(STRING, "Kind (resource) of the object."),
    name=f(STRING, "Name of the object."),
    retryAfterSeconds=f(INTEGER, "Seconds the client should wait before retrying."),
    uid=f(STRING, "UID of the object."),
)

STATUS = obj(
    f"{META}.Status",
    "The result of an operation that does not return an object, usually an error.",
    apiVersion=f(STRING, "Versioned schema of this representation."),
    code=f(INTEGER, "Suggested HTTP status code."),
    details=f(STATUS_DETAILS, "Extra data about the error."),
    kind=f(STRING, "Kind of this representation: Status."),
    message=f(STRING, "Human-readable description of the result."),
    metadata=f(LIST_META, "Standard list metadata."),
    reason=f(STRING, "Machine-readable reason, e.g. NotFound or AlreadyExists."),
    status=f(STRING, "Success or Failure."),
)

PRECONDITIONS = obj(
    f"{META}.Preconditions",
    "Conditions the object must meet for the operation to proceed.",
    resourceVersion=f(STRING, "Required resourceVersion of the object."),
    uid=f(STRING, "Required UID of the object."),
)

DELETE_OPTIONS = obj(
    f"{META}.DeleteOptions",
    "Options of a delete request.",
    apiVersion=f(STRING, "Versioned schema of this representation."),
    dryRun=atomic(STRING, "All: run every stage but do not persist."),
    gracePeriodSeconds=f(INTEGER, "Seconds before the object is deleted; 0 deletes now."),
    ignoreStoreReadErrorWithClusterBreakingPotential=f(
        BOOLEAN, "Delete an object that cannot be read from storage, skipping finalizers."),
    kind=f(STRING, "Kind of this representation: DeleteOptions."),
    orphanDependents=f(BOOLEAN, "Deprecated: use propagationPolicy."),
    preconditions=f(PRECONDITIONS, "Must hold for the deletion to proceed."),
    propagationPolicy=f(STRING, "Orphan, Background or Foreground: what happens to dependents."),
)

PATCH = Type(
    kind="any",
    name=f"{META}.Patch",
    description="The body of a PATCH request; its format is given by the content type.",
    preserve_unknown=True,
)


def api_object(name: str, description: str, /, **fields: Field) -> Type:
    """A top-level kind: apiVersion, kind and metadata, then its own fields.

    A kind may pass its own `metadata` field (core Events require metadata).
    """
    standard = dict(
        apiVersion=f(STRING, "Versioned schema of this representation, e.g. apps/v1."),
        kind=f(STRING, "REST kind of this object, in CamelCase."),
        metadata=f(OBJECT_META, "Standard object metadata."),
    )
    return obj(name, description, **(standard | fields))


def list_kind(item: Type) -> Type:
    """The <Kind>List type of a top-level kind: list metadata and the items."""
    kind = item.name.rsplit(".", 1)[1]
    return obj(
        f"{item.name}List",
        f"A list of {kind} objects.",
        apiVersion=f(STRING, "Versioned schema of this representation."),
        items=f(array(item), f"The {kind} objects.", required=True),
        kind=f(STRING, f"REST kind of this list: {kind}List."),
        metadata=f(LIST_META, "Standard list metadata."),
    )
