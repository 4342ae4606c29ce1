"""downwardAPI volume: the pod's metadata and its containers' resources as files.

Upstream: pkg/volume/downwardapi/downwardapi.go. Each item is one file: a fieldRef
(metadata.name, .namespace, .uid, .labels, .annotations, or one label or annotation)
or a resourceFieldRef (a container's request or limit). Labels and annotations can
change while the pod runs; the kubelet rewrites the files atomically when they do.
"""

from __future__ import annotations

import os
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.kubelet.envvars import FieldPathError, extract_field_path
from minikube_py.kubelet.resources import ResourceFieldError, resource_field_value
from minikube_py.kubelet.volumes.atomic_writer import FileProjection
from minikube_py.kubelet.volumes.configmap import DEFAULT_MODE
from minikube_py.kubelet.volumes.emptydir import setup_dir
from minikube_py.kubelet.volumes.plugin import SetUpError, aggregate, project


def collect_data(items: list[Obj], pod: Obj, default_mode: int,
                 allocatable: Obj) -> dict[str, FileProjection]:
    """CollectData: one file per item; every item that fails is reported together."""
    payload = {}
    errors = []
    for item in items:
        try:
            if "fieldRef" in item:
                value = extract_field_path(pod, item["fieldRef"]["fieldPath"])
            else:
                selector = item["resourceFieldRef"]
                value = resource_field_value(selector, pod, selector.get("containerName", ""),
                                             allocatable)
        except (FieldPathError, ResourceFieldError) as error:
            errors.append(str(error))
            continue
        payload[os.path.normpath(item["path"])] = FileProjection(
            value.encode(), item.get("mode", default_mode))
    if errors:
        raise SetUpError(aggregate(errors))
    return payload


async def set_up(path: Path, source: Obj, pod: Obj, allocatable: Obj) -> bool:
    """SetUp: project the items into `path`; True if some file changed."""
    payload = collect_data(source.get("items") or [], pod,
                           source.get("defaultMode", DEFAULT_MODE), allocatable)
    setup_dir(path)
    return await project(path, payload)
