"""Kinds of the smaller groups: discovery.k8s.io EndpointSlice, coordination.k8s.io Lease,
events.k8s.io Event, scheduling.k8s.io PriorityClass, policy PodDisruptionBudget and
Eviction (the body of pods/eviction), autoscaling Scale (the body of the scale subresource).

Upstream: k8s.io/api/<group>/v1/types.go.
"""

from __future__ import annotations

from minikube_py.api.schema.core import EVENT_SOURCE
from minikube_py.api.schema.dsl import (
    BOOLEAN,
    INT_OR_STRING,
    INTEGER,
    STRING,
    STRING_MAP,
    atomic,
    f,
    map_of,
    merged,
    obj,
    set_of,
)
from minikube_py.api.schema.meta import (
    CONDITION,
    DELETE_OPTIONS,
    LABEL_SELECTOR,
    MICRO_TIME,
    TIME,
    api_object,
)
from minikube_py.api.schema.references import OBJECT_REFERENCE

# --- discovery.k8s.io/v1 ---------------------------------------------------------------

DISCOVERY = "io.k8s.api.discovery.v1"

ENDPOINT = obj(
    f"{DISCOVERY}.Endpoint",
    "One backend of a service: its addresses, readiness and location.",
    addresses=set_of(STRING, "IP addresses (or an FQDN) of the endpoint."),
    conditions=f(obj(
        f"{DISCOVERY}.EndpointConditions",
        "The state of an endpoint.",
        ready=f(BOOLEAN, "Ready to receive traffic (serving and not terminating)."),
        serving=f(BOOLEAN, "Able to receive traffic, even while terminating."),
        terminating=f(BOOLEAN, "Being terminated."),
    ), "State of the endpoint."),
    deprecatedTopology=f(STRING_MAP, "Deprecated topology labels."),
    hints=f(obj(
        f"{DISCOVERY}.EndpointHints",
        "Hints for topology-aware routing.",
        forNodes=atomic(obj(
            f"{DISCOVERY}.ForNode",
            "A node that should use an endpoint.",
            name=f(STRING, "Name of the node.", required=True),
        ), "Nodes that should consume this endpoint."),
        forZones=atomic(obj(
            f"{DISCOVERY}.ForZone",
            "A zone that should use an endpoint.",
            name=f(STRING, "Name of the zone.", required=True),
        ), "Zones that should consume this endpoint."),
    ), "Routing hints."),
    hostname=f(STRING, "Hostname of the endpoint."),
    nodeName=f(STRING, "Node hosting the endpoint."),
    targetRef=f(OBJECT_REFERENCE, "Object (usually a pod) behind the endpoint."),
    zone=f(STRING, "Zone of the endpoint."),
)

ENDPOINT_SLICE = api_object(
    f"{DISCOVERY}.EndpointSlice",
    "A subset of the endpoints of a service.",
    addressType=f(STRING, "IPv4, IPv6 or FQDN.", required=True),
    endpoints=atomic(ENDPOINT, "The endpoints."),
    ports=atomic(obj(
        f"{DISCOVERY}.EndpointPort",
        "A port every endpoint of the slice exposes.",
        appProtocol=f(STRING, "Application protocol of the port."),
        name=f(STRING, "Name matching the service port's name."),
        port=f(INTEGER, "The port number."),
        protocol=f(STRING, "TCP, UDP or SCTP."),
    ), "Ports exposed by every endpoint."),
)

# --- coordination.k8s.io/v1 ------------------------------------------------------------

LEASE = api_object(
    "io.k8s.api.coordination.v1.Lease",
    "A lease, used for leader election and node heartbeats.",
    spec=f(obj(
        "io.k8s.api.coordination.v1.LeaseSpec",
        "Who holds the lease and until when.",
        acquireTime=f(MICRO_TIME, "When the current holder acquired the lease."),
        holderIdentity=f(STRING, "Identity of the holder."),
        leaseDurationSeconds=f(INTEGER, "Seconds candidates wait before taking over."),
        leaseTransitions=f(INTEGER, "Number of changes of holder."),
        preferredHolder=f(STRING, "Holder that should take over (coordinated election)."),
        renewTime=f(MICRO_TIME, "When the holder last renewed the lease."),
        strategy=f(STRING, "Strategy picking the leader in coordinated election."),
    ), "The lease."),
)

# --- events.k8s.io/v1 ------------------------------------------------------------------

EVENTS = "io.k8s.api.events.v1"

EVENTS_EVENT = api_object(
    f"{EVENTS}.Event",
    "A report of something that happened to an object (the newer Event shape).",
    action=f(STRING, "What action was taken or failed."),
    deprecatedCount=f(INTEGER, "Compatibility with core/v1 Event count."),
    deprecatedFirstTimestamp=f(TIME, "Compatibility with core/v1 Event firstTimestamp."),
    deprecatedLastTimestamp=f(TIME, "Compatibility with core/v1 Event lastTimestamp."),
    deprecatedSource=f(EVENT_SOURCE, "Compatibility with core/v1 Event source."),
    eventTime=f(MICRO_TIME, "When the event was first observed.", required=True),
    note=f(STRING, "Human-readable description."),
    reason=f(STRING, "Why the action was taken, in CamelCase."),
    regarding=f(OBJECT_REFERENCE, "The object the event is about."),
    related=f(OBJECT_REFERENCE, "A second object involved."),
    reportingController=f(STRING, "Controller that emitted the event."),
    reportingInstance=f(STRING, "Instance of that controller."),
    series=f(obj(
        f"{EVENTS}.EventSeries",
        "A series of repeated events.",
        count=f(INTEGER, "Occurrences so far.", required=True),
        lastObservedTime=f(MICRO_TIME, "Time of the last occurrence.", required=True),
    ), "Data about a series of repeats."),
    type=f(STRING, "Normal or Warning."),
)

# --- scheduling.k8s.io/v1 --------------------------------------------------------------

PRIORITY_CLASS = api_object(
    "io.k8s.api.scheduling.v1.PriorityClass",
    "Maps a priority class name to an integer priority of pods.",
    description=f(STRING, "When to use this class."),
    globalDefault=f(BOOLEAN, "Use this class for pods without priorityClassName."),
    preemptionPolicy=f(STRING, "PreemptLowerPriority (default) or Never."),
    value=f(INTEGER, "The priority; higher runs first.", required=True),
)

# --- apiregistration.k8s.io/v1 -----------------------------------------------------------

APIREGISTRATION = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1"

API_SERVICE = api_object(
    f"{APIREGISTRATION}.APIService",
    "Which server serves a group-version of the API: this one (Local) or a Service.",
    spec=f(obj(
        f"{APIREGISTRATION}.APIServiceSpec",
        "Where the group-version is served, and how it ranks in discovery.",
        caBundle=f(STRING, "PEM CA bundle to check the serving certificate (base64)."),
        group=f(STRING, "The API group name."),
        groupPriorityMinimum=f(INTEGER, "The group's minimum priority in discovery.",
                               required=True),
        insecureSkipTLSVerify=f(BOOLEAN, "Do not check the serving certificate."),
        service=f(obj(
            f"{APIREGISTRATION}.ServiceReference",
            "The Service of the server; unset for this server's own (Local) APIs.",
            name=f(STRING, "The Service's name."),
            namespace=f(STRING, "The Service's namespace."),
            port=f(INTEGER, "The Service's port (default 443)."),
        ), "The Service that serves the group-version; unset: Local."),
        version=f(STRING, "The API version."),
        versionPriority=f(INTEGER, "The version's priority within its group.",
                          required=True),
    ), "Spec of the APIService."),
    status=f(obj(
        f"{APIREGISTRATION}.APIServiceStatus",
        "Whether the group-version is available.",
        conditions=merged(obj(
            f"{APIREGISTRATION}.APIServiceCondition",
            "One condition (Available).",
            lastTransitionTime=f(TIME, "When the status last changed."),
            message=f(STRING, "Why, for people."),
            reason=f(STRING, "Why, in one CamelCase word."),
            status=f(STRING, "True, False or Unknown.", required=True),
            type=f(STRING, "The condition's type.", required=True),
        ), "Current conditions (Available).", key="type"),
    ), "Observed state. Read-only."),
)

# --- policy/v1 -------------------------------------------------------------------------

POLICY = "io.k8s.api.policy.v1"

POD_DISRUPTION_BUDGET = api_object(
    f"{POLICY}.PodDisruptionBudget",
    "Bounds the voluntary disruptions (evictions) of a set of pods.",
    spec=f(obj(
        f"{POLICY}.PodDisruptionBudgetSpec",
        "The desired bound.",
        maxUnavailable=f(INT_OR_STRING, "Pods that may be unavailable after an eviction."),
        minAvailable=f(INT_OR_STRING, "Pods that must stay available after an eviction."),
        selector=f(LABEL_SELECTOR, "Labels of the pods the budget covers.",
                   strategy="replace"),
        unhealthyPodEvictionPolicy=f(STRING, "IfHealthyBudget or AlwaysAllow."),
    ), "Desired bound on disruptions."),
    status=f(obj(
        f"{POLICY}.PodDisruptionBudgetStatus",
        "The observed state of a budget.",
        conditions=merged(CONDITION, "Current conditions (DisruptionAllowed).", key="type"),
        currentHealthy=f(INTEGER, "Healthy pods now.", required=True),
        desiredHealthy=f(INTEGER, "Healthy pods required.", required=True),
        disruptedPods=f(map_of(TIME), "Pods being evicted, by name, with the eviction "
                        "time."),
        disruptionsAllowed=f(INTEGER, "Evictions allowed now.", required=True),
        expectedPods=f(INTEGER, "Pods the budget covers.", required=True),
        observedGeneration=f(INTEGER, "Generation the status was computed for."),
    ), "Observed state of the budget. Read-only."),
)

EVICTION = api_object(
    f"{POLICY}.Eviction",
    "A request to delete a pod within its disruption budget (the pods/eviction "
    "subresource).",
    deleteOptions=f(DELETE_OPTIONS, "How the pod is deleted."),
)

# --- autoscaling/v1 --------------------------------------------------------------------

AUTOSCALING = "io.k8s.api.autoscaling.v1"

SCALE = api_object(
    f"{AUTOSCALING}.Scale",
    "The scale subresource of a workload: desired and observed replicas.",
    spec=f(obj(
        f"{AUTOSCALING}.ScaleSpec",
        "The desired scale.",
        replicas=f(INTEGER, "Desired number of replicas."),
    ), "Desired scale."),
    status=f(obj(
        f"{AUTOSCALING}.ScaleStatus",
        "The observed scale.",
        replicas=f(INTEGER, "Observed number of replicas.", required=True),
        selector=f(STRING, "Label selector of the pods, in query string form."),
    ), "Observed scale. Read-only."),
)
