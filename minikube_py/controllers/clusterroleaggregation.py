"""The ClusterRole aggregation controller: an aggregated ClusterRole holds the rules of the
ClusterRoles its selectors pick.

    any ClusterRole added, updated or deleted --> queue every ClusterRole with an
                                                  aggregationRule
    sync(name): rules = the union of the rules of the ClusterRoles its
                clusterRoleSelectors match (api/rbac.py: by name, no duplicates)
                --> update the role, only when its rules differ

Labelling a ClusterRole `rbac.authorization.k8s.io/aggregate-to-view: "true"` adds its
rules to `view`, and so to `edit` and `admin`, which aggregate `view` in turn; taking the
label off takes the rules away again. Any change may matter to any aggregated role and
the roles are few, so every change queues them all (upstream does the same). Upstream:
pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go.
"""

from __future__ import annotations

from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.rbac import aggregated_rules, same_rules
from minikube_py.client.informer import EventHandler
from minikube_py.controllers.base import Controller, ControllerContext

RBAC_GROUP = "rbac.authorization.k8s.io"


class ClusterRoleAggregationController(Controller):
    """Keep each aggregated ClusterRole's rules the union of the roles it selects (keys:
    ClusterRole names)."""

    name: ClassVar[str] = "clusterrole-aggregation"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.cluster_roles_api = self.client.resource("clusterroles", RBAC_GROUP)
        informer = self.informer("clusterroles", RBAC_GROUP)
        self.cluster_roles = informer.store
        informer.add_event_handler(EventHandler(
            on_add=self.enqueue_aggregated,
            on_update=lambda _old, new: self.enqueue_aggregated(new),
            on_delete=self.enqueue_aggregated))

    def enqueue_aggregated(self, _changed: Obj) -> None:
        """A ClusterRole changed: queue every role that aggregates others."""
        for role in self.cluster_roles.list():
            if role.get("aggregationRule") is not None:
                self.enqueue(role)

    async def sync(self, key: str) -> None:
        """syncClusterRole: write the union of the selected roles' rules, if it differs."""
        role = self.cluster_roles.get(key)
        if role is None or role.get("aggregationRule") is None:
            return
        rules = aggregated_rules(role, self.cluster_roles.list())
        if same_rules(rules, role.get("rules")):
            return
        await self.cluster_roles_api.update({**role, "rules": rules})
