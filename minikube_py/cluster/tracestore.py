"""Where the cluster's traces are: `up` tells every client, in the cluster itself.

    kube-public/minikube-py-tracing   ConfigMap: url = the trace receiver's query URL
                                      (http://<bridge address>:4318)
    Role + RoleBinding                every signed-in user may read that one ConfigMap

`mkctl trace` reads it, so it finds the traces of whichever cluster its kubeconfig
names; nothing is published when the spans go to another --tracing-endpoint.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.client.errors import AlreadyExists, NotFound
from minikube_py.client.rest import Client

NAMESPACE = "kube-public"
CONFIG_MAP = "minikube-py-tracing"
RBAC = "rbac.authorization.k8s.io"


def tracing_objects(url: str) -> list[tuple[str, str, Obj]]:
    """(group, plural, object) of what `up` publishes."""
    metadata = {"name": CONFIG_MAP, "namespace": NAMESPACE,
                "labels": {"app.kubernetes.io/managed-by": "minikube-py"}}
    return [
        ("", "configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata,
                            "data": {"url": url}}),
        (RBAC, "roles", {
            "apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": dict(metadata),
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                       "resourceNames": [CONFIG_MAP], "verbs": ["get"]}]}),
        (RBAC, "rolebindings", {
            "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": dict(metadata),
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": CONFIG_MAP},
            "subjects": [{"apiGroup": RBAC, "kind": "Group",
                          "name": "system:authenticated"}]}),
    ]


async def publish_trace_receiver(admin_kubeconfig: Path, url: str) -> None:
    """Create what is missing; point the ConfigMap at `url` (the receiver may have moved)."""
    async with Client.from_kubeconfig(admin_kubeconfig, user_agent="minikube-py-up") as client:
        for group, plural, obj in tracing_objects(url):
            api = client.resource(plural, group or None)
            with contextlib.suppress(AlreadyExists):
                await api.create(obj)
                continue
            if plural == "configmaps":
                try:
                    current = await api.get(CONFIG_MAP, NAMESPACE)
                except NotFound:
                    continue
                if current.get("data") != obj["data"]:
                    await api.update({**current, "data": obj["data"]})
