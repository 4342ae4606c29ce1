"""flowcontrol.apiserver.k8s.io: FlowSchemas and PriorityLevelConfigurations."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.apiserver.endpoints.tables.cells import NONE, age, name_of
from minikube_py.apiserver.endpoints.tables.table import AGE, NAME, Cells, column

FLOW_SCHEMA_COLUMNS = (
    NAME,
    column("PriorityLevel", "string", "`name` is the name of the priority level "
                                      "configuration being referenced Required."),
    column("MatchingPrecedence", "string", "`matchingPrecedence` is used to choose among "
                                           "the FlowSchemas that match a given request."),
    column("DistinguisherMethod", "string", "`distinguisherMethod` defines how to compute "
                                            "the flow distinguisher for requests that match "
                                            "this schema."),
    AGE,
    column("MissingPL", "string",
           "references a broken or non-existent PriorityLevelConfiguration"),
)


def print_flow_schema(flow_schema: Obj, now: datetime) -> Cells:
    """printFlowSchema: level, precedence, distinguisher, and the Dangling condition."""
    spec = flow_schema.get("spec") or {}
    method = (spec.get("distinguisherMethod") or {}).get("type") or NONE
    missing = "?"
    for condition in (flow_schema.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Dangling":
            missing = condition.get("status") or ""
            break
    return [name_of(flow_schema), (spec.get("priorityLevelConfiguration") or {}).get("name", ""),
            spec.get("matchingPrecedence", 0), method, age(flow_schema, now), missing]


PRIORITY_LEVEL_CONFIGURATION_COLUMNS = (
    NAME,
    column("Type", "string", "`type` indicates whether this priority level is subject to "
                             "limitation on request execution."),
    column("NominalConcurrencyShares", "string", "`nominalConcurrencyShares` (NCS) contributes "
                                                 "to the computation of the "
                                                 "NominalConcurrencyLimit (NominalCL) of this "
                                                 "level."),
    column("Queues", "string", "`queues` is the number of queues for this priority level."),
    column("HandSize", "string", "`handSize` is a small positive number that configures the "
                                 "shuffle sharding of requests into queues."),
    column("QueueLengthLimit", "string", "`queueLengthLimit` is the maximum number of "
                                         "requests allowed to be waiting in a given queue of "
                                         "this priority level at a time."),
    AGE,
)


def print_priority_level_configuration(level: Obj, now: datetime) -> Cells:
    """printPriorityLevelConfiguration: a Limited level's shares and queuing, else <none>."""
    spec = level.get("spec") or {}
    shares: object = NONE
    queues: object = NONE
    hand_size: object = NONE
    queue_length_limit: object = NONE
    limited = spec.get("limited")
    if isinstance(limited, dict):
        shares = limited.get("nominalConcurrencyShares", 0)
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if isinstance(queuing, dict):
            queues = queuing.get("queues", 0)
            hand_size = queuing.get("handSize", 0)
            queue_length_limit = queuing.get("queueLengthLimit", 0)
    return [name_of(level), spec.get("type", ""), shares, queues, hand_size,
            queue_length_limit, age(level, now)]
