"""ServiceAccount (upstream plugin/pkg/admission/serviceaccount): every pod runs as a
ServiceAccount, and gets a token for it unless it says otherwise.

On a new pod (mirror pods excepted):

    spec.serviceAccountName empty        -> "default"
    the account must exist               -> 403 "error looking up service account
                                            ns/name: serviceaccount "name" not found";
                                            "default" is waited for a moment, since the
                                            serviceaccount controller creates it right
                                            after the namespace
    automount (the pod's automountServiceAccountToken, else the account's, else true),
    when this server signs tokens:
        a projected volume kube-api-access-<5 chars>: a token for the account (about an
        hour, the kubelet renews it), the cluster's CA (ConfigMap kube-root-ca.crt) and
        the namespace, mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount
        in every container that has nothing mounted there

With the kubelet's KUBERNETES_SERVICE_HOST/PORT variables, that is all an in-cluster
client (client-go's rest.InClusterConfig, the Python client's load_incluster_config)
needs.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any, Protocol

from minikube_py.api import Obj, errors
from minikube_py.apiserver.auth.admission import CREATE, Attributes, Plugin

DEFAULT_SERVICE_ACCOUNT = "default"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_PREFIX = "kube-api-access-"
ROOT_CA_CONFIG_MAP = "kube-root-ca.crt"
TOKEN_EXPIRATION_SECONDS = 3607  # an hour, plus the few seconds upstream adds
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
# Looking for the default account: tries, and the pause between them (upstream: 10
# tries, 100-200 ms apart).
DEFAULT_ACCOUNT_TRIES = 10
RETRY_SECONDS = (0.1, 0.2)


class AccountStore(Protocol):
    async def get(self, namespace: str, name: str) -> Obj: ...


class ServiceAccount(Plugin):
    name = "ServiceAccount"
    operations = frozenset((CREATE,))
    mutating = True

    def __init__(self, accounts: AccountStore, *, mount_tokens: bool = True) -> None:
        self.accounts = accounts
        self.mount_tokens = mount_tokens

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation == CREATE and attributes.is_resource("", "pods")
                and isinstance(attributes.obj, dict)
                and isinstance(attributes.obj.get("spec"), dict))

    async def admit(self, attributes: Attributes) -> bool:
        """Admit: the account's name, its existence, and its token volume."""
        pod = attributes.obj
        assert pod is not None
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        if MIRROR_POD_ANNOTATION in annotations:
            return False
        spec = pod["spec"]
        if not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = DEFAULT_SERVICE_ACCOUNT
        name = spec["serviceAccountName"]
        account = await self._account(attributes.namespace, name)
        if account is None:
            raise errors.forbidden(
                "pods", "", attributes.name,
                f"error looking up service account {attributes.namespace}/{name}: "
                f'serviceaccount "{name}" not found')
        if not self.mount_tokens or not _automount(account, spec):
            return False
        return mount_token(spec)

    async def _account(self, namespace: str, name: str) -> Obj | None:
        tries = DEFAULT_ACCOUNT_TRIES if name == DEFAULT_SERVICE_ACCOUNT else 1
        for attempt in range(tries):
            if attempt:
                await asyncio.sleep(random.uniform(*RETRY_SECONDS))
            try:
                return await self.accounts.get(namespace, name)
            except errors.APIError as err:
                if err.code != 404:
                    raise
        return None


def _automount(account: Obj, spec: Obj) -> bool:
    for setting in (spec.get("automountServiceAccountToken"),
                    account.get("automountServiceAccountToken")):
        if setting is not None:
            return bool(setting)
    return True


def token_volume(name: str) -> Obj:
    return {"name": name, "projected": {"defaultMode": 0o644, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                                 "path": "token"}},
        {"configMap": {"name": ROOT_CA_CONFIG_MAP,
                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}}


def mount_token(spec: Obj) -> bool:
    """Add the kube-api-access volume and mount it where nothing else is mounted; True
    when the pod changed."""
    containers = [container for list_name in ("initContainers", "containers")
                  for container in spec.get(list_name) or [] if isinstance(container, dict)]
    needing = [container for container in containers
               if not any(isinstance(mount, dict) and mount.get("mountPath") == MOUNT_PATH
                          for mount in container.get("volumeMounts") or [])]
    if not needing:
        return False
    taken = {volume.get("name") for volume in spec.get("volumes") or []
             if isinstance(volume, dict)}
    name = _volume_name(taken)
    spec["volumes"] = [*(spec.get("volumes") or []), token_volume(name)]
    for container in needing:
        container["volumeMounts"] = [*(container.get("volumeMounts") or []),
                                     {"name": name, "readOnly": True, "mountPath": MOUNT_PATH}]
    return True


def _volume_name(taken: set[Any]) -> str:
    """kube-api-access- and five characters, as upstream's SimpleNameGenerator."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    while True:
        name = VOLUME_PREFIX + "".join(random.choices(alphabet, k=5))
        if name not in taken:
            return name
