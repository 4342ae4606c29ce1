"""secret volume: the keys of a Secret as files, on a tmpfs, kept up to date.

Upstream: pkg/volume/secret/secret.go. Like a configMap volume, except that the values
are base64 on the wire and the volume lives in memory (an emptyDir of medium Memory), so
a secret is never written to the node's disk.
"""

from __future__ import annotations

import base64
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.kubelet.volumes.configmap import DEFAULT_MODE, make_payload
from minikube_py.kubelet.volumes.emptydir import setup_tmpfs
from minikube_py.kubelet.volumes.plugin import GetObject, SetUpError, project


def secret_files(secret: Obj) -> dict[str, bytes]:
    """Every key of the Secret with its decoded bytes."""
    return {key: base64.b64decode(value) for key, value in (secret.get("data") or {}).items()}


async def set_up(path: Path, source: Obj, namespace: str, get_secret: GetObject, *,
                 tmpfs_size: int | None) -> bool:
    """SetUp: fetch the Secret and project it into a tmpfs at `path`; True if changed.
    A missing Secret fails the mount unless the volume is optional (then: no files)."""
    name = source.get("secretName", "")
    optional = bool(source.get("optional"))
    secret = await get_secret(namespace, name)
    if secret is None and not optional:
        raise SetUpError(f'secret "{name}" not found')
    payload = make_payload(source.get("items") or [], secret_files(secret or {}),
                           source.get("defaultMode", DEFAULT_MODE), optional, kind="secret")
    await setup_tmpfs(path, tmpfs_size)
    return await project(path, payload)
