"""configMap volume: the keys of a ConfigMap as files, kept up to date.

Upstream: pkg/volume/configmap/configmap.go. Every key of `data` and `binaryData` becomes
a file (or only the listed `items`, each at its own path and mode); the files are
written with the AtomicWriter, so an update of the ConfigMap swaps them all at once.
"""

from __future__ import annotations

import base64
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.kubelet.volumes.atomic_writer import FileProjection
from minikube_py.kubelet.volumes.emptydir import setup_dir
from minikube_py.kubelet.volumes.plugin import GetObject, SetUpError, project

DEFAULT_MODE = 0o644


def config_map_files(config_map: Obj) -> dict[str, bytes]:
    """Every key of the ConfigMap with its bytes (binaryData is base64 on the wire)."""
    files = {key: value.encode() for key, value in (config_map.get("data") or {}).items()}
    for key, value in (config_map.get("binaryData") or {}).items():
        files[key] = base64.b64decode(value)
    return files


def make_payload(items: list[Obj], files: dict[str, bytes], default_mode: int,
                 optional: bool, kind: str = "configmap") -> dict[str, FileProjection]:
    """MakePayload: all keys with the default mode, or the listed items at their path
    and mode; a listed key that is missing is an error unless the source is optional."""
    if not items:
        return {key: FileProjection(data, default_mode) for key, data in files.items()}
    payload = {}
    for item in items:
        if item["key"] not in files:
            if optional:
                continue
            if kind == "configmap":
                raise SetUpError(f"configmap references non-existent config key: {item['key']}")
            raise SetUpError(f"references non-existent secret key: {item['key']}")
        payload[item["path"]] = FileProjection(files[item["key"]],
                                               item.get("mode", default_mode))
    return payload


async def set_up(path: Path, source: Obj, namespace: str, get_config_map: GetObject) -> bool:
    """SetUp: fetch the ConfigMap and project it into `path`; True if the files changed.
    A missing ConfigMap fails the mount unless the volume is optional (then: no files)."""
    name = source.get("name", "")
    optional = bool(source.get("optional"))
    config_map = await get_config_map(namespace, name)
    if config_map is None and not optional:
        raise SetUpError(f'configmap "{name}" not found')
    payload = make_payload(source.get("items") or [], config_map_files(config_map or {}),
                           source.get("defaultMode", DEFAULT_MODE), optional)
    setup_dir(path)
    return await project(path, payload)
