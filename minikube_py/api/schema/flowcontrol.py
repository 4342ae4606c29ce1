"""Kinds of flowcontrol.apiserver.k8s.io/v1 (API Priority and Fairness): FlowSchema, which
classifies requests into flows of a priority level, and PriorityLevelConfiguration, which
says how many seats a level has and how its requests queue.

Upstream: k8s.io/api/flowcontrol/v1/types.go.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import BOOLEAN, INTEGER, STRING, atomic, f, merged, obj, set_of
from minikube_py.api.schema.meta import TIME, api_object
from minikube_py.api.schema.types import Type

FLOWCONTROL = "io.k8s.api.flowcontrol.v1"


def _condition(kind: str) -> Type:
    """A condition of the kind's status (its own definition, as upstream's)."""
    return obj(
        f"{FLOWCONTROL}.{kind}Condition",
        f"One condition of a {kind}.",
        lastTransitionTime=f(TIME, "When the status last changed."),
        message=f(STRING, "Why, for people."),
        reason=f(STRING, "Why, in one CamelCase word."),
        status=f(STRING, "True, False or Unknown."),
        type=f(STRING, "The condition's type."),
    )


SUBJECT = obj(
    f"{FLOWCONTROL}.Subject",
    "Who a rule matches: a user, a group or a ServiceAccount.",
    group=f(obj(f"{FLOWCONTROL}.GroupSubject", "A group.",
                name=f(STRING, "The group's name, or * for every group.", required=True)),
            "The group (kind Group)."),
    kind=f(STRING, "User, Group or ServiceAccount.", required=True),
    serviceAccount=f(obj(
        f"{FLOWCONTROL}.ServiceAccountSubject", "A ServiceAccount.",
        name=f(STRING, "The account's name, or * for every one in the namespace.",
               required=True),
        namespace=f(STRING, "The account's namespace.", required=True),
    ), "The ServiceAccount (kind ServiceAccount)."),
    user=f(obj(f"{FLOWCONTROL}.UserSubject", "A user.",
               name=f(STRING, "The user's name, or * for every user.", required=True)),
           "The user (kind User)."),
)

RESOURCE_POLICY_RULE = obj(
    f"{FLOWCONTROL}.ResourcePolicyRule",
    "Which resource requests a rule matches: verb, API group, resource and namespace.",
    apiGroups=set_of(STRING, "API groups, or * alone."),
    clusterScope=f(BOOLEAN, "Whether requests without a namespace match."),
    namespaces=set_of(STRING, "Namespaces, or * alone for every one."),
    resources=set_of(STRING, "Resources (with /subresource), or * alone."),
    verbs=set_of(STRING, "Verbs, or * alone."),
)

NON_RESOURCE_POLICY_RULE = obj(
    f"{FLOWCONTROL}.NonResourcePolicyRule",
    "Which non-resource requests a rule matches: verb and URL path.",
    nonResourceURLs=set_of(STRING, "Paths, a trailing /* matching a prefix, or * alone."),
    verbs=set_of(STRING, "Verbs, or * alone."),
)

FLOW_SCHEMA = api_object(
    f"{FLOWCONTROL}.FlowSchema",
    "Classifies requests into flows and names the priority level that serves them.",
    spec=f(obj(
        f"{FLOWCONTROL}.FlowSchemaSpec",
        "Which requests the schema matches, and where they go.",
        distinguisherMethod=f(obj(
            f"{FLOWCONTROL}.FlowDistinguisherMethod",
            "How matched requests are split into flows.",
            type=f(STRING, "ByUser or ByNamespace.", required=True),
        ), "How matched requests are split into flows; unset: one flow."),
        matchingPrecedence=f(INTEGER, "Lower matches first (1 to 10000; default 1000)."),
        priorityLevelConfiguration=f(obj(
            f"{FLOWCONTROL}.PriorityLevelConfigurationReference",
            "A priority level, by name.",
            name=f(STRING, "The priority level's name.", required=True),
        ), "The priority level that serves matched requests.", required=True),
        rules=atomic(obj(
            f"{FLOWCONTROL}.PolicyRulesWithSubjects",
            "Subjects and the requests of theirs that match.",
            nonResourceRules=atomic(NON_RESOURCE_POLICY_RULE, "Non-resource requests."),
            resourceRules=atomic(RESOURCE_POLICY_RULE, "Resource requests."),
            subjects=atomic(SUBJECT, "Who.", required=True),
        ), "A request matches if any rule does; none: nothing matches."),
    ), "What the schema matches."),
    status=f(obj(
        f"{FLOWCONTROL}.FlowSchemaStatus",
        "Observed state.",
        conditions=merged(_condition("FlowSchema"), "Current conditions (Dangling).",
                          key="type"),
    ), "Observed state. Read-only."),
)

PRIORITY_LEVEL_CONFIGURATION = api_object(
    f"{FLOWCONTROL}.PriorityLevelConfiguration",
    "A priority level: its share of the server's seats and how its requests queue.",
    spec=f(obj(
        f"{FLOWCONTROL}.PriorityLevelConfigurationSpec",
        "The level's configuration.",
        exempt=f(obj(
            f"{FLOWCONTROL}.ExemptPriorityLevelConfiguration",
            "An exempt level: its requests are never held back.",
            lendablePercent=f(INTEGER, "Percent of its nominal seats others may borrow."),
            nominalConcurrencyShares=f(INTEGER, "Its share of the server's seats."),
        ), "Configuration of an Exempt level."),
        limited=f(obj(
            f"{FLOWCONTROL}.LimitedPriorityLevelConfiguration",
            "A limited level: its seats, and what happens to requests beyond them.",
            borrowingLimitPercent=f(INTEGER, "How many seats, in percent of its nominal "
                                             "ones, it may borrow from others."),
            lendablePercent=f(INTEGER, "Percent of its nominal seats others may borrow."),
            limitResponse=f(obj(
                f"{FLOWCONTROL}.LimitResponse",
                "What happens to a request that cannot be served at once.",
                queuing=f(obj(
                    f"{FLOWCONTROL}.QueuingConfiguration",
                    "Shuffle-sharded fair queuing.",
                    handSize=f(INTEGER, "Queues dealt to each flow."),
                    queueLengthLimit=f(INTEGER, "Requests a queue holds."),
                    queues=f(INTEGER, "Queues of the level."),
                ), "Queuing parameters (type Queue)."),
                type=f(STRING, "Queue or Reject.", required=True),
            ), "What happens to requests that cannot be served at once."),
            nominalConcurrencyShares=f(INTEGER, "Its share of the server's seats "
                                                "(default 30)."),
        ), "Configuration of a Limited level."),
        type=f(STRING, "Exempt or Limited.", required=True),
    ), "The level's configuration."),
    status=f(obj(
        f"{FLOWCONTROL}.PriorityLevelConfigurationStatus",
        "Observed state.",
        conditions=merged(_condition("PriorityLevelConfiguration"), "Current conditions.",
                          key="type"),
    ), "Observed state. Read-only."),
)
