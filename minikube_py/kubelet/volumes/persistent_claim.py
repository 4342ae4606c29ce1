"""persistentVolumeClaim volume: the storage a claim in the pod's namespace stands for.

Upstream resolves the claim to its bound PersistentVolume and sets that up with the PV's
own plugin (desired_state_of_world_populator.go). This cluster has no provisioner: every
claim is backed by a node directory `<claims root>/<namespace>/<claim uid>`, created on
first use and kept when pods come and go (it is the claim's data).
"""

from __future__ import annotations

from pathlib import Path

from minikube_py.api import Obj
from minikube_py.kubelet.volumes.plugin import GetObject, ProcessVolumeError

CLAIM_DIR_MODE = 0o777


async def set_up(claims_root: Path, namespace: str, source: Obj, get_claim: GetObject) -> Path:
    """Find the claim (it must exist and not be terminating) and its directory."""
    name = source["claimName"]
    claim = await get_claim(namespace, name)
    if claim is None:
        raise ProcessVolumeError(
            f"error processing PVC {namespace}/{name}: failed to fetch PVC from API server: "
            f'persistentvolumeclaims "{name}" not found')
    if claim["metadata"].get("deletionTimestamp"):
        raise ProcessVolumeError(f"error processing PVC {namespace}/{name}: PVC is being deleted")
    path = claims_root / namespace / claim["metadata"]["uid"]
    if not path.is_dir():
        path.mkdir(parents=True)
        path.chmod(CLAIM_DIR_MODE)
    return path
