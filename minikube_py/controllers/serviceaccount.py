"""The ServiceAccount controller: every active namespace has a `default` ServiceAccount.

    namespace added or updated --+
    serviceaccount deleted ------+--> queue the namespace --> sync: create `default`
                                                              if the cache lacks it

Pods that name no service account run as `default`, so it must exist in every namespace,
and comes back if deleted. Namespaces being deleted are left alone. Upstream:
pkg/controller/serviceaccount/serviceaccounts_controller.go (ServiceAccountsController).
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.client.errors import AlreadyExists, Forbidden
from minikube_py.client.informer import EventHandler
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.endpoints import NAMESPACE_TERMINATING_CAUSE, has_status_cause

# DefaultServiceAccountsControllerOptions: the accounts every namespace gets.
SERVICE_ACCOUNTS_TO_ENSURE = ("default",)


class ServiceAccountController(Controller):
    """Ensure the default ServiceAccounts exist in every Active namespace (keys: namespace)."""

    name = "serviceaccount"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.service_accounts_api = self.client.resource("serviceaccounts")
        namespaces = self.informer("namespaces")
        service_accounts = self.informer("serviceaccounts")
        self.namespaces = namespaces.store
        self.service_accounts = service_accounts.store
        namespaces.add_event_handler(EventHandler(
            on_add=self.enqueue, on_update=lambda _old, new: self.enqueue(new)))
        service_accounts.add_event_handler(EventHandler(on_delete=self.service_account_deleted))

    def service_account_deleted(self, service_account: Obj) -> None:
        """A ServiceAccount went: recreate it if it was one of ours."""
        self.queue.add(service_account["metadata"]["namespace"])

    async def sync(self, key: str) -> None:
        """syncNamespace: create each missing default ServiceAccount in an Active namespace."""
        namespace = self.namespaces.get(key)
        if namespace is None or (namespace.get("status") or {}).get("phase") != "Active":
            return
        for name in SERVICE_ACCOUNTS_TO_ENSURE:
            if self.service_accounts.get_by_name(key, name) is not None:
                continue
            account = {"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": name, "namespace": key}}
            try:
                await self.service_accounts_api.create(account)
            except AlreadyExists:
                continue
            except Forbidden as error:
                if not has_status_cause(error, NAMESPACE_TERMINATING_CAUSE):
                    raise
