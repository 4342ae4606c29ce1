"""--use-service-account-credentials: each controller calls the API server as its own
ServiceAccount (upstream's SAControllerClientBuilder, k8s.io/controller-manager/pkg/
clientbuilder).

    the controller-manager's own identity (system:kube-controller-manager)
        -> lists and watches everything for the shared informers
        -> makes sure kube-system/<account> exists, and asks its token
           (serviceaccounts/<account>/token, an hour)
    each controller's writes go out with its token, as
        system:serviceaccount:kube-system:<account>, whom RBAC grants exactly the
        system:controller:<account> role; the token is renewed when 80% of its life
        has passed

So a bug in one controller cannot write what another controller owns, and the audit
log and `kubectl auth can-i --as=system:serviceaccount:kube-system:deployment-controller`
show which controller does what.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging

from minikube_py.client.errors import AlreadyExists, NotFound
from minikube_py.client.rest import Client

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"
TOKEN_SECONDS = 3600
RENEW_AFTER = 0.8  # of a token's life


class ServiceAccountClients:
    """Clients that authenticate as kube-system ServiceAccounts, kept renewed."""

    def __init__(self, root: Client, *, token_seconds: int = TOKEN_SECONDS) -> None:
        self.root = root
        self.token_seconds = token_seconds
        self._clients: dict[str, Client] = {}
        self._renewals: list[asyncio.Task[None]] = []

    async def client_for(self, account: str) -> Client:
        """A client that is kube-system/<account> (the account is created if missing)."""
        if account in self._clients:
            return self._clients[account]
        await self._ensure_account(account)
        config = dataclasses.replace(self.root.config, token=await self._token(account),
                                     cert_file=None, key_file=None)
        client = Client(config, user_agent=f"{self.root.user_agent}/{account}",
                        trace_context=self.root.trace_context)
        self._clients[account] = client
        self._renewals.append(asyncio.create_task(self._renew(account, client),
                                                  name=f"token-{account}"))
        return client

    async def close(self) -> None:
        for task in self._renewals:
            task.cancel()
        for task in self._renewals:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for client in self._clients.values():
            await client.close()
        self._renewals.clear()
        self._clients.clear()

    async def _ensure_account(self, account: str) -> None:
        accounts = self.root.resource("serviceaccounts")
        try:
            await accounts.get(account, NAMESPACE)
        except NotFound:
            with contextlib.suppress(AlreadyExists):
                await accounts.create({"apiVersion": "v1", "kind": "ServiceAccount",
                                       "metadata": {"name": account, "namespace": NAMESPACE}})

    async def _token(self, account: str) -> str:
        answer = await self.root.request(
            "POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{account}/token",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                  "spec": {"expirationSeconds": self.token_seconds}})
        return str(answer["status"]["token"])

    async def _renew(self, account: str, client: Client) -> None:
        while True:
            await asyncio.sleep(self.token_seconds * RENEW_AFTER)
            while True:
                try:
                    await self._ensure_account(account)
                    client.set_token(await self._token(account))
                    break
                except Exception as error:  # keep trying: the old token still works
                    log.warning("renewing the token of %s: %s", account, error)
                    await asyncio.sleep(10)


# The account each controller runs as (upstream's names; RBAC's bootstrap policy binds
# system:controller:<account> to kube-system/<account>).
CONTROLLER_ACCOUNTS = {
    "endpoint": "endpoint-controller",
    "endpointslice": "endpointslice-controller",
    "replicaset": "replicaset-controller",
    "replicationcontroller": "replication-controller",
    "deployment": "deployment-controller",
    "daemonset": "daemon-set-controller",
    "statefulset": "statefulset-controller",
    "job": "job-controller",
    "cronjob": "cronjob-controller",
    "ttl-after-finished": "ttl-after-finished-controller",
    "garbagecollector": "generic-garbage-collector",
    "namespace": "namespace-controller",
    "serviceaccount": "service-account-controller",
    "service-lb": "service-controller",
    "disruption": "disruption-controller",
    "nodelifecycle": "node-controller",
    "taint-eviction-controller": "node-controller",
    "podgc": "pod-garbage-collector",
    "persistentvolume-binder": "persistent-volume-binder",
    "persistentvolume-expander": "expand-controller",
    "resourcequota": "resourcequota-controller",
    "horizontalpodautoscaling": "horizontal-pod-autoscaler",
    "clusterrole-aggregation": "clusterrole-aggregation-controller",
    "root-ca-cert-publisher": "root-ca-cert-publisher",
    "csrapproving": "certificate-controller",
    "csrsigning": "certificate-controller",
    "csrcleaner": "certificate-controller",
    # their roles are namespaced (bootstrappolicy/namespace_policy.py)
    "bootstrapsigner": "bootstrap-signer",
    "tokencleaner": "token-cleaner",
}


def account_for(controller: str) -> str:
    return CONTROLLER_ACCOUNTS.get(controller, f"{controller}-controller")
