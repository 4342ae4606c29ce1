"""rbac.authorization.k8s.io/v1 kinds: Role, ClusterRole, RoleBinding, ClusterRoleBinding.

Upstream: k8s.io/api/rbac/v1/types.go. Every list here is atomic.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import STRING, atomic, f, obj
from minikube_py.api.schema.meta import LABEL_SELECTOR, api_object

RBAC = "io.k8s.api.rbac.v1"

POLICY_RULE = obj(
    f"{RBAC}.PolicyRule",
    "Verbs allowed on resources (or non-resource URLs).",
    apiGroups=atomic(STRING, "API groups of the resources; \"\" is the core group."),
    nonResourceURLs=atomic(STRING, "URL paths such as /healthz (ClusterRoles only)."),
    resourceNames=atomic(STRING, "Names of the objects allowed; all if empty."),
    resources=atomic(STRING, "Resources, e.g. pods or deployments/scale; * for all."),
    verbs=atomic(STRING, "Verbs, e.g. get, list, watch; * for all.", required=True),
)

ROLE_REF = obj(
    f"{RBAC}.RoleRef",
    "The role a binding grants.",
    apiGroup=f(STRING, "rbac.authorization.k8s.io.", required=True),
    kind=f(STRING, "Role or ClusterRole.", required=True),
    name=f(STRING, "Name of the role.", required=True),
)

SUBJECT = obj(
    f"{RBAC}.Subject",
    "Who a binding grants the role to.",
    apiGroup=f(STRING, "\"\" for ServiceAccount, rbac.authorization.k8s.io for User and "
               "Group."),
    kind=f(STRING, "User, Group or ServiceAccount.", required=True),
    name=f(STRING, "Name of the subject.", required=True),
    namespace=f(STRING, "Namespace of a ServiceAccount."),
)

ROLE = api_object(
    f"{RBAC}.Role",
    "Permissions within one namespace.",
    rules=atomic(POLICY_RULE, "The permissions."),
)

CLUSTER_ROLE = api_object(
    f"{RBAC}.ClusterRole",
    "Permissions across the cluster, or a reusable set for RoleBindings.",
    aggregationRule=f(obj(
        f"{RBAC}.AggregationRule",
        "Builds a ClusterRole's rules from other ClusterRoles.",
        clusterRoleSelectors=atomic(LABEL_SELECTOR, "Labels of the ClusterRoles to "
                                    "aggregate."),
    ), "If set, rules are computed by the controller from other ClusterRoles."),
    rules=atomic(POLICY_RULE, "The permissions."),
)

ROLE_BINDING = api_object(
    f"{RBAC}.RoleBinding",
    "Grants a Role or ClusterRole within one namespace.",
    roleRef=f(ROLE_REF, "The role granted; cannot change.", required=True),
    subjects=atomic(SUBJECT, "Who the role is granted to."),
)

CLUSTER_ROLE_BINDING = api_object(
    f"{RBAC}.ClusterRoleBinding",
    "Grants a ClusterRole across the cluster.",
    roleRef=f(ROLE_REF, "The ClusterRole granted; cannot change.", required=True),
    subjects=atomic(SUBJECT, "Who the role is granted to."),
)
