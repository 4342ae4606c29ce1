"""The volume manager: set up a pod's volumes before its containers start, keep projected
content current, tear volumes down when the pod is done, and build each container's mounts.

Upstream: pkg/kubelet/volumemanager (desired/actual state of world, the reconciler's
MountVolume.SetUp and UnmountVolume.TearDown), and kubelet_pods.go makeMounts for the
container side. On disk, like upstream:

    <pods root>/<uid>/volumes/kubernetes.io~<plugin>/<volume>/   one dir per volume
    <pods root>/<uid>/containers/<container>/<random>            termination messages

hostPath volumes are the node path itself; a persistentVolumeClaim volume is what its
bound PersistentVolume says (a hostPath or local path of this node).

The first set-up of each volume is a span "MountVolume.SetUp" under the kubelet's SyncPod
(when the pod carries a trace): the volume and, for a claim, its PersistentVolume and
the node path it mounts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.api.quantity import memory_bytes
from minikube_py.client.errors import ClientError
from minikube_py.kubelet.envvars import ContainerConfigError, expand
from minikube_py.kubelet.volumes import (
    configmap,
    downwardapi,
    emptydir,
    hostpath,
    persistent_claim,
    projected,
    secret,
)
from minikube_py.kubelet.volumes.persistent_claim import (
    GetNodeLabels,
    GetVolume,
    NewMounterError,
    NodeAffinityError,
    RecordEvent,
    UpdateClaimStatus,
)
from minikube_py.kubelet.volumes.plugin import (
    PLUGIN_DIRS,
    PROJECTED_SOURCES,
    GetObject,
    ProcessVolumeError,
    SetUpError,
)
from minikube_py.kubelet.volumes.projected import GetServiceAccountToken, ServiceAccountTokens
from minikube_py.tracing.tracer import child_span, current_span

log = logging.getLogger(__name__)
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"
PROPAGATION_MODES = ("None", "HostToContainer", "Bidirectional")


class _MountError(Exception):
    """A mount step of a PV failed; the message is complete (it names the PV)."""


class VolumeError(Exception):
    """A volume of the pod could not be set up; the message is the FailedMount event's."""

    def __init__(self, volume_name: str, message: str) -> None:
        super().__init__(message)
        self.volume_name = volume_name
        self.message = message


@dataclass(frozen=True)
class ContainerMount:
    """One bind mount of a container (a CRI Mount): host path -> container path."""

    container_path: str
    host_path: Path
    readonly: bool = False
    propagation: str | None = None  # None, HostToContainer, Bidirectional (upstream names)


def _source_of(volume: Obj) -> str:
    """The volume's source field (emptyDir, configMap, ...); no source means emptyDir."""
    for field in (*PLUGIN_DIRS, "hostPath", "persistentVolumeClaim"):
        if field in volume:
            return field
    return "" if len(volume) > 1 else "emptyDir"


class VolumeManager:
    """The kubelet's volumes: one directory tree per pod under `pods_root`."""

    def __init__(self, pods_root: Path, *, get_config_map: GetObject,
                 get_secret: GetObject, get_claim: GetObject, get_volume: GetVolume,
                 get_node_labels: GetNodeLabels,
                 get_service_account_token: GetServiceAccountToken | None = None,
                 allocatable: Obj | None = None, node_name: str = "",
                 update_claim_status: UpdateClaimStatus | None = None,
                 record_event: RecordEvent | None = None) -> None:
        self.pods_root = pods_root
        self.get_config_map = get_config_map
        self.get_secret = get_secret
        self.get_claim = get_claim
        self.get_volume = get_volume
        self.get_node_labels = get_node_labels
        self.tokens = (ServiceAccountTokens(get_service_account_token)
                       if get_service_account_token is not None else None)
        self.allocatable = allocatable or {}
        self.node_name = node_name
        self.update_claim_status = update_claim_status
        self.record_event = record_event
        self._mounted: dict[str, dict[str, Path]] = {}  # uid -> volume name -> host path
        self._locks: dict[str, asyncio.Lock] = {}

    def pod_dir(self, pod_uid: str) -> Path:
        return self.pods_root / pod_uid

    def _lock(self, pod_uid: str) -> asyncio.Lock:
        return self._locks.setdefault(pod_uid, asyncio.Lock())

    # -- SetUp --------------------------------------------------------------------------

    def _tmpfs_size(self, pod: Obj) -> int | None:
        """The size of the tmpfs behind secret and projected volumes."""
        memory = self.allocatable.get("memory")
        return emptydir.memory_medium_size(pod, None, memory_bytes(memory) if memory else None)

    async def _set_up(self, pod: Obj, volume: Obj) -> tuple[Path, bool]:
        """MountVolume.SetUp of one volume: its host path, and whether content changed."""
        meta = pod["metadata"]
        kind = _source_of(volume)
        source = volume.get(kind) or {}
        if kind == "hostPath":
            return hostpath.set_up(source), False
        if kind == "persistentVolumeClaim":
            return await self._set_up_claim(pod, source), False
        if kind not in PLUGIN_DIRS:
            raise ProcessVolumeError(f'failed to get Plugin from volumeSpec for volume '
                                     f'"{volume["name"]}" err=no volume plugin matched')
        path = self.pod_dir(meta["uid"]) / "volumes" / PLUGIN_DIRS[kind] / volume["name"]
        if kind == "emptyDir":
            memory = self.allocatable.get("memory")
            await emptydir.set_up(path, source, pod=pod,
                                  allocatable_memory=memory_bytes(memory) if memory else None)
            return path, False
        if kind == "configMap":
            changed = await configmap.set_up(path, source, meta["namespace"],
                                             self.get_config_map)
        elif kind == "secret":
            changed = await secret.set_up(path, source, meta["namespace"], self.get_secret,
                                          tmpfs_size=self._tmpfs_size(pod))
        elif kind == "downwardAPI":
            changed = await downwardapi.set_up(path, source, pod, self.allocatable)
        else:
            changed = await projected.set_up(
                path, source, pod, get_config_map=self.get_config_map,
                get_secret=self.get_secret, tokens=self.tokens, allocatable=self.allocatable,
                tmpfs_size=self._tmpfs_size(pod))
        return path, changed

    async def _set_up_claim(self, pod: Obj, source: Obj) -> Path:
        """The claim's bound PV, checked against this node's labels, then set up, then
        grown if its claim grew; errors name the PV, as upstream's volume spec name is
        the PV's."""
        claim, volume = await persistent_claim.bound_volume(
            pod["metadata"]["namespace"], source, self.get_claim, self.get_volume)
        name = volume["metadata"]["name"]
        if (span := current_span()).recording:
            span.set("persistentvolume", name)
        try:
            persistent_claim.check_affinity(volume, await self.get_node_labels())
            path = persistent_claim.set_up(volume)
            if span.recording:
                span.set("path", str(path))
            await self._node_expand(pod, claim, volume)
            return path
        except NodeAffinityError as error:
            raise _MountError(f'MountVolume.NodeAffinity check failed for volume "{name}" : '
                              f"{error}") from error
        except NewMounterError as error:
            raise _MountError(f'MountVolume.NewMounter initialization failed for volume '
                              f'"{name}" : {error}') from error
        except SetUpError as error:
            raise _MountError(f'MountVolume.SetUp failed for volume "{name}" : {error}') \
                from error

    async def _node_expand(self, pod: Obj, claim: Obj, volume: Obj) -> None:
        """MountVolume.NodeExpandVolume: finish the claim's resize if it waits for us."""
        if self.update_claim_status is None or self.record_event is None:
            return
        try:
            await persistent_claim.node_expand(pod, claim, volume, self.node_name,
                                               self.update_claim_status, self.record_event)
        except ClientError as error:
            raise _MountError(f'MountVolume.NodeExpandVolume failed for volume "'
                              f'{volume["metadata"]["name"]}" : {error}') from error

    async def _expand_mounted_claims(self, pod: Obj, mounted: set[str]) -> None:
        """The online part (the populator's checkVolumeFSResize on a pod's resync): a
        claim mounted before that grew meanwhile is grown now. Errors are logged; the
        next sync tries again."""
        uid = pod["metadata"]["uid"]
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            source = volume.get("persistentVolumeClaim")
            if source is None or volume["name"] not in mounted:
                continue
            try:
                claim, bound = await persistent_claim.bound_volume(
                    pod["metadata"]["namespace"], source, self.get_claim, self.get_volume)
                await self._node_expand(pod, claim, bound)
            except (ProcessVolumeError, _MountError, ClientError) as error:
                log.warning("pod %s: volume %s: %s", uid, volume["name"], error)

    async def _set_up_or_raise(self, pod: Obj, volume: Obj) -> tuple[Path, bool]:
        try:
            return await self._set_up(pod, volume)
        except _MountError as error:
            raise VolumeError(volume["name"], str(error)) from error
        except SetUpError as error:
            raise VolumeError(volume["name"], f'MountVolume.SetUp failed for volume '
                                              f'"{volume["name"]}" : {error}') from error
        except ProcessVolumeError as error:
            mounted = self._mounted.get(pod["metadata"]["uid"]) or {}
            unmounted = sorted(v["name"] for v in (pod.get("spec") or {}).get("volumes") or []
                               if v["name"] not in mounted)
            raise VolumeError(volume["name"], (
                f"Unable to attach or mount volumes: unmounted volumes=[{' '.join(unmounted)}], "
                f"unattached volumes=[], failed to process volumes=[{volume['name']}]: "
                f"{error}")) from error

    async def _mount(self, pod: Obj, volume: Obj) -> Path:
        """The first MountVolume.SetUp of a volume, as a span of the pod's sync."""
        with child_span("MountVolume.SetUp", volume=volume["name"]):
            path, _ = await self._set_up_or_raise(pod, volume)
            return path

    async def mount_pod_volumes(self, pod: Obj) -> dict[str, Path]:
        """WaitForAttachAndMount: set up every volume of the pod; volume name -> host path.

        Safe to call on every sync: a volume set up before is only re-projected
        (configMap, secret, downwardAPI, projected). A re-projection that fails keeps the
        old content, as upstream's remount does; the first volume that cannot be set up
        at all raises VolumeError.
        """
        uid = pod["metadata"]["uid"]
        async with self._lock(uid):
            mounted = self._mounted.setdefault(uid, {})
            mounted_before = set(mounted)
            for volume in (pod.get("spec") or {}).get("volumes") or []:
                name = volume["name"]
                if name in mounted and _source_of(volume) not in PROJECTED_SOURCES:
                    continue
                try:
                    if name in mounted:
                        mounted[name], _ = await self._set_up_or_raise(pod, volume)
                    else:
                        mounted[name] = await self._mount(pod, volume)
                except VolumeError as error:
                    if name not in mounted:
                        raise
                    log.warning("pod %s: keeping old content: %s", uid, error)
            await self._expand_mounted_claims(pod, mounted_before)
            return dict(mounted)

    async def refresh(self, pod: Obj) -> bool:
        """Re-project the pod's configMap, secret, downwardAPI and projected volumes that
        are set up; True if some file changed. Raises VolumeError on the first failure."""
        uid = pod["metadata"]["uid"]
        changed = False
        async with self._lock(uid):
            mounted = self._mounted.get(uid) or {}
            for volume in (pod.get("spec") or {}).get("volumes") or []:
                if volume["name"] in mounted and _source_of(volume) in PROJECTED_SOURCES:
                    _, volume_changed = await self._set_up_or_raise(pod, volume)
                    changed = changed or volume_changed
        return changed

    async def ephemeral_volume_usage(self, pod: Obj) -> dict[str, int]:
        """The bytes each set-up emptyDir and configMap volume of the pod holds (its
        volume stats: for the emptyDir sizeLimits and the pod's ephemeral storage)."""
        mounted = self._mounted.get(pod["metadata"]["uid"]) or {}
        used = {}
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            path = mounted.get(volume["name"])
            if path is not None and _source_of(volume) in ("emptyDir", "configMap"):
                used[volume["name"]] = await asyncio.to_thread(emptydir.disk_usage, path)
        return used

    # -- TearDown -----------------------------------------------------------------------

    async def teardown_pod_volumes(self, pod_uid: str) -> None:
        """UnmountVolume.TearDown of every volume: unmount the tmpfs mounts, remove
        pods/<uid>/volumes. PersistentVolumes and hostPaths stay; so do the pod's
        termination message files (cleanup_orphans removes them with the pod dir)."""
        async with self._lock(pod_uid):
            volumes_dir = self.pod_dir(pod_uid) / "volumes"
            if volumes_dir.exists():
                await emptydir.unmount_all_under(volumes_dir)
                await asyncio.to_thread(shutil.rmtree, volumes_dir)
            self._mounted.pop(pod_uid, None)
            if self.tokens is not None:
                self.tokens.forget(pod_uid)
        self._locks.pop(pod_uid, None)

    async def cleanup_orphans(self, live_uids: set[str]) -> None:
        """cleanupOrphanedPodDirs: for every pod dir of a pod the kubelet no longer has,
        unmount what is still mounted and remove the whole directory."""
        if not self.pods_root.is_dir():
            return
        for pod_dir in self.pods_root.iterdir():
            if pod_dir.name in live_uids or not pod_dir.is_dir():
                continue
            await self.teardown_pod_volumes(pod_dir.name)
            await emptydir.unmount_all_under(pod_dir)
            await asyncio.to_thread(shutil.rmtree, pod_dir)

    # -- container mounts -----------------------------------------------------------------

    def container_mounts(self, pod: Obj, container: Obj, volume_paths: dict[str, Path],
                         env: dict[str, str]) -> list[ContainerMount]:
        """makeMounts: the container's volumeMounts as bind mounts, and its termination
        message file. subPathExpr is expanded with the container's `env`. Errors are
        ContainerConfigErrors (the container waits in CreateContainerConfigError)."""
        volumes = {volume["name"]: volume for volume in (pod.get("spec") or {}).get("volumes")
                   or []}
        mounts = []
        for volume_mount in container.get("volumeMounts") or []:
            name = volume_mount["name"]
            if name not in volume_paths or name not in volumes:
                raise ContainerConfigError(
                    f'cannot find volume "{name}" to mount into container "{container["name"]}"')
            host_path = volume_paths[name]
            sub_path = _sub_path(volume_mount, env)
            if sub_path:
                host_path = _prepare_sub_path(host_path, sub_path, name, container["name"])
            propagation = volume_mount.get("mountPropagation")
            if propagation is not None and propagation not in PROPAGATION_MODES:
                raise ContainerConfigError(f'invalid MountPropagation mode: "{propagation}"')
            volume = volumes[name]
            kind = _source_of(volume)
            readonly = (bool(volume_mount.get("readOnly")) or kind in PROJECTED_SOURCES
                        or bool((volume.get(kind) or {}).get("readOnly")))
            mounts.append(ContainerMount(volume_mount["mountPath"], host_path, readonly,
                                         propagation))
        message_path = container.get("terminationMessagePath", DEFAULT_TERMINATION_MESSAGE_PATH)
        if message_path:
            mounts.append(ContainerMount(
                message_path,
                self.termination_message_file(pod["metadata"]["uid"], container["name"])))
        return mounts

    def termination_message_file(self, pod_uid: str, container_name: str) -> Path:
        """A fresh, empty, world-writable file for one container instance to write its
        termination message to: pods/<uid>/containers/<container>/<random id>."""
        directory = self.pod_dir(pod_uid) / "containers" / container_name
        directory.mkdir(parents=True, exist_ok=True, mode=0o750)
        path = directory / uuid.uuid4().hex[:8]
        path.touch()
        path.chmod(0o666)
        return path


def _sub_path(volume_mount: Obj, env: dict[str, str]) -> str:
    """subPath, or subPathExpr expanded with the env (ExpandContainerVolumeMounts); every
    reference must have a non-empty value. Absolute paths and '..' are refused."""
    sub_path = volume_mount.get("subPath", "")
    expression = volume_mount.get("subPathExpr", "")
    if expression:
        missing = set()

        def lookup(name: str) -> str:
            if not env.get(name):
                missing.add(name)
            return env.get(name, "")

        sub_path = expand(expression, lookup)
        if missing:
            raise ContainerConfigError(f"missing value for {', '.join(sorted(missing))}")
    if sub_path.startswith("/"):
        raise ContainerConfigError(f"error SubPath `{sub_path}` must not be an absolute path")
    if ".." in sub_path.split("/"):
        raise ContainerConfigError(
            f"unable to provision SubPath `{sub_path}`: must not contain '..'")
    return sub_path


def _prepare_sub_path(volume_path: Path, sub_path: str, volume: str, container: str) -> Path:
    """Create a missing subPath as a directory (with the volume's mode), and make sure
    that, symlinks resolved, it stays inside the volume (upstream's safe subpath)."""
    target = volume_path / sub_path
    if not os.path.lexists(target):
        try:
            target.mkdir(parents=True, mode=volume_path.stat().st_mode & 0o7777)
        except OSError as error:
            raise ContainerConfigError(f'failed to create subPath directory for volumeMount '
                                       f'"{volume}" of container "{container}"') from error
    resolved = Path(os.path.realpath(target))
    root = Path(os.path.realpath(volume_path))
    if resolved != root and root not in resolved.parents:
        raise ContainerConfigError(
            f'failed to prepare subPath for volumeMount "{volume}" of container "{container}"')
    return resolved
