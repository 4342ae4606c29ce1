"""What the volume plugins share: where a pod's volumes live on disk, and their errors.

Upstream: pkg/volume/plugins.go. A plugin named `kubernetes.io/configmap` keeps a pod's
volume in `pods/<uid>/volumes/kubernetes.io~configmap/<volume name>/`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.kubelet.volumes.atomic_writer import AtomicWriter, FileProjection, PayloadError

# get_config_map / get_secret / get_claim: (namespace, name) -> the object, None if absent.
GetObject = Callable[[str, str], Awaitable[Obj | None]]

# Volume source field -> the directory of its plugin under pods/<uid>/volumes/.
PLUGIN_DIRS = {
    "emptyDir": "kubernetes.io~empty-dir",
    "configMap": "kubernetes.io~configmap",
    "secret": "kubernetes.io~secret",
    "downwardAPI": "kubernetes.io~downward-api",
    "projected": "kubernetes.io~projected",
}
# Sources whose content the kubelet writes and keeps up to date; containers mount them
# read-only.
PROJECTED_SOURCES = ("configMap", "secret", "downwardAPI", "projected")


class SetUpError(Exception):
    """A plugin's SetUp failed; shown as `MountVolume.SetUp failed for volume "v" : ...`."""


class ProcessVolumeError(Exception):
    """The volume could not even be resolved to something to set up (a missing claim)."""


def aggregate(messages: list[str]) -> str:
    """utilerrors.NewAggregate: one message as is, several as [m1, m2]."""
    return messages[0] if len(messages) == 1 else f"[{', '.join(messages)}]"


async def project(volume_dir: Path, payload: dict[str, FileProjection]) -> bool:
    """Write a payload with the AtomicWriter (off the event loop); True if it changed."""
    try:
        return await asyncio.to_thread(AtomicWriter(volume_dir).write, payload)
    except PayloadError as error:
        raise SetUpError(str(error)) from error
