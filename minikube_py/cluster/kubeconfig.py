"""Write a kubeconfig file that kubectl and the official Python client read."""

from __future__ import annotations

from pathlib import Path

import yaml

CLUSTER_NAME = "minikube-py"


def kubeconfig(server_url: str, *, namespace: str = "default") -> dict[str, object]:
    """A kubeconfig with one cluster, one user (no credentials yet) and one context."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER_NAME, "cluster": {"server": server_url}}],
        "users": [{"name": "admin", "user": {}}],
        "contexts": [{
            "name": CLUSTER_NAME,
            "context": {"cluster": CLUSTER_NAME, "user": "admin", "namespace": namespace},
        }],
        "current-context": CLUSTER_NAME,
        "preferences": {},
    }


def write_kubeconfig(path: Path, server_url: str, *, namespace: str = "default") -> Path:
    return write_kubeconfig_document(path, kubeconfig(server_url, namespace=namespace))


def write_kubeconfig_document(path: Path, document: dict[str, object]) -> Path:
    """Write a kubeconfig readable by its owner only, all at once (a reader never sees
    half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(document, sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path
