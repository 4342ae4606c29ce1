"""core/v1 kinds with little structure: Namespace, ConfigMap, Secret, ServiceAccount,
Event, LimitRange, ResourceQuota and Binding.

Upstream: k8s.io/api/core/v1/types.go.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import (
    BOOLEAN,
    INTEGER,
    QUANTITY_MAP,
    STRING,
    STRING_MAP,
    atomic,
    f,
    merged,
    obj,
)
from minikube_py.api.schema.meta import (
    MICRO_TIME,
    OBJECT_META,
    TIME,
    api_object,
)
from minikube_py.api.schema.references import CORE, LOCAL_OBJECT_REFERENCE, OBJECT_REFERENCE

# --- Namespace -------------------------------------------------------------------------

NAMESPACE_CONDITION = obj(
    f"{CORE}.NamespaceCondition",
    "One aspect of a namespace's state (e.g. NamespaceDeletionContentFailure).",
    lastTransitionTime=f(TIME, "When status last changed."),
    message=f(STRING, "Human-readable details."),
    reason=f(STRING, "CamelCase reason for the last transition."),
    status=f(STRING, "True, False or Unknown.", required=True),
    type=f(STRING, "Type of the condition.", required=True),
)

NAMESPACE = api_object(
    f"{CORE}.Namespace",
    "A scope for names; deleting it deletes everything in it.",
    spec=f(obj(
        f"{CORE}.NamespaceSpec",
        "The desired state of a namespace.",
        finalizers=atomic(STRING, "Must be empty before the namespace is removed."),
    ), "Desired state of the namespace."),
    status=f(obj(
        f"{CORE}.NamespaceStatus",
        "The observed state of a namespace.",
        conditions=merged(NAMESPACE_CONDITION, "Current conditions.", key="type"),
        phase=f(STRING, "Active or Terminating."),
    ), "Observed state of the namespace. Read-only."),
)

# --- configuration ---------------------------------------------------------------------

CONFIG_MAP = api_object(
    f"{CORE}.ConfigMap",
    "Configuration data for pods.",
    binaryData=f(STRING_MAP, "Binary values, base64-encoded."),
    data=f(STRING_MAP, "UTF-8 values."),
    immutable=f(BOOLEAN, "If true, data cannot be changed."),
)

SECRET = api_object(
    f"{CORE}.Secret",
    "Sensitive data such as passwords, tokens and keys.",
    data=f(STRING_MAP, "Values, base64-encoded."),
    immutable=f(BOOLEAN, "If true, data cannot be changed."),
    stringData=f(STRING_MAP, "Plain-text values merged into data on write."),
    type=f(STRING, "Type of the secret, e.g. Opaque or kubernetes.io/tls."),
)

SERVICE_ACCOUNT = api_object(
    f"{CORE}.ServiceAccount",
    "An identity for processes running in pods.",
    automountServiceAccountToken=f(BOOLEAN, "Mount a token into pods by default."),
    imagePullSecrets=atomic(LOCAL_OBJECT_REFERENCE, "Secrets for pulling images of pods "
                            "using this account."),
    secrets=merged(OBJECT_REFERENCE, "Secrets pods using this account may use.", key="name"),
)

# --- Event (core) ----------------------------------------------------------------------

EVENT_SOURCE = obj(
    f"{CORE}.EventSource",
    "The component that reported an event.",
    component=f(STRING, "Component name."),
    host=f(STRING, "Node name."),
)

EVENT_SERIES = obj(
    f"{CORE}.EventSeries",
    "A series of repeated events.",
    count=f(INTEGER, "Occurrences so far."),
    lastObservedTime=f(MICRO_TIME, "Time of the last occurrence."),
)

EVENT = api_object(
    f"{CORE}.Event",
    "A report of something that happened to an object.",
    action=f(STRING, "What action was taken or failed."),
    count=f(INTEGER, "How many times the event occurred."),
    eventTime=f(MICRO_TIME, "When the event was first observed."),
    firstTimestamp=f(TIME, "When the event was first recorded."),
    involvedObject=f(OBJECT_REFERENCE, "The object the event is about.", required=True),
    lastTimestamp=f(TIME, "When the event last occurred."),
    message=f(STRING, "Human-readable description."),
    metadata=f(OBJECT_META, "Standard object metadata.", required=True),
    reason=f(STRING, "Short CamelCase reason, e.g. Scheduled or BackOff."),
    related=f(OBJECT_REFERENCE, "A second object involved."),
    reportingComponent=f(STRING, "Controller that emitted the event."),
    reportingInstance=f(STRING, "Instance of that controller."),
    series=f(EVENT_SERIES, "Data about a series of repeats."),
    source=f(EVENT_SOURCE, "Component reporting the event."),
    type=f(STRING, "Normal or Warning."),
)

# --- policy: LimitRange and ResourceQuota ----------------------------------------------

LIMIT_RANGE_ITEM = obj(
    f"{CORE}.LimitRangeItem",
    "Limits for one kind of object (Container, Pod or PersistentVolumeClaim).",
    default=f(QUANTITY_MAP, "Default limits when none are given."),
    defaultRequest=f(QUANTITY_MAP, "Default requests when none are given."),
    max=f(QUANTITY_MAP, "Maximum usage by resource."),
    maxLimitRequestRatio=f(QUANTITY_MAP, "Maximum limit/request ratio by resource."),
    min=f(QUANTITY_MAP, "Minimum usage by resource."),
    type=f(STRING, "Container, Pod or PersistentVolumeClaim.", required=True),
)

LIMIT_RANGE = api_object(
    f"{CORE}.LimitRange",
    "Resource defaults and bounds applied to objects in a namespace.",
    spec=f(obj(
        f"{CORE}.LimitRangeSpec",
        "The limits of a LimitRange.",
        limits=atomic(LIMIT_RANGE_ITEM, "The limits.", required=True),
    ), "The limits enforced."),
)

SCOPED_RESOURCE_SELECTOR_REQUIREMENT = obj(
    f"{CORE}.ScopedResourceSelectorRequirement",
    "One match expression over quota scopes.",
    operator=f(STRING, "In, NotIn, Exists or DoesNotExist.", required=True),
    scopeName=f(STRING, "The scope, e.g. PriorityClass or Terminating.", required=True),
    values=atomic(STRING, "Values for In and NotIn."),
)

RESOURCE_QUOTA = api_object(
    f"{CORE}.ResourceQuota",
    "Limits on the total resource use in a namespace.",
    spec=f(obj(
        f"{CORE}.ResourceQuotaSpec",
        "The desired quota.",
        hard=f(QUANTITY_MAP, "Hard limits by resource name."),
        scopeSelector=f(obj(
            f"{CORE}.ScopeSelector",
            "Selects the objects a quota tracks by scope.",
            matchExpressions=atomic(SCOPED_RESOURCE_SELECTOR_REQUIREMENT, "The expressions."),
        ), "Scopes the quota tracks, as expressions."),
        scopes=atomic(STRING, "Scopes the quota tracks."),
    ), "The quota."),
    status=f(obj(
        f"{CORE}.ResourceQuotaStatus",
        "Enforced limits and current use.",
        hard=f(QUANTITY_MAP, "Enforced hard limits."),
        used=f(QUANTITY_MAP, "Current use."),
    ), "Current use. Read-only."),
)

# --- Binding (pods/binding) ------------------------------------------------------------

BINDING = api_object(
    f"{CORE}.Binding",
    "Binds a pod to a node; the scheduler posts it to pods/binding.",
    target=f(OBJECT_REFERENCE, "The node to bind to.", required=True),
)
