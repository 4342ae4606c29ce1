"""Volume plugins and the volume manager, on real files in a temporary directory.

Memory-backed volumes (emptyDir medium Memory, secret, projected) mount real tmpfs
filesystems (the tests run as root); the `root` fixture unmounts whatever is left, also
when a test fails.
"""

from __future__ import annotations

import base64
import copy
import os
import re
import socket
import stat
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minikube_py.api import Obj
from minikube_py.kubelet.envvars import ContainerConfigError
from minikube_py.kubelet.volumes.atomic_writer import (
    AtomicWriter,
    FileProjection,
    PayloadError,
)
from minikube_py.kubelet.volumes.emptydir import mount_points_under, unmount_all_under
from minikube_py.kubelet.volumes.hostpath import check_type
from minikube_py.kubelet.volumes.manager import ContainerMount, VolumeError, VolumeManager
from minikube_py.kubelet.volumes.plugin import SetUpError
from minikube_py.tracing.tracer import Span, Tracer

MI = 1024**2
TIMESTAMPED = re.compile(r"^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d{9}$")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
async def root(tmp_path: Path) -> AsyncIterator[Path]:
    """A scratch directory; every mount left below it is unmounted at the end."""
    yield tmp_path
    await unmount_all_under(tmp_path)


class Cluster:
    """The API objects the volume manager reads, editable by the test."""

    def __init__(self) -> None:
        self.config_maps: dict[tuple[str, str], Obj] = {}
        self.secrets: dict[tuple[str, str], Obj] = {}
        self.claims: dict[tuple[str, str], Obj] = {}
        self.volumes: dict[str, Obj] = {}
        self.node_labels = {"kubernetes.io/hostname": "node-1"}
        self.token_requests: list[tuple[str, str, str, int]] = []
        self.status_writes: list[Obj] = []
        self.events: list[tuple[str, str, str, str, str]] = []

    async def get_config_map(self, namespace: str, name: str) -> Obj | None:
        return self.config_maps.get((namespace, name))

    async def get_secret(self, namespace: str, name: str) -> Obj | None:
        return self.secrets.get((namespace, name))

    async def get_claim(self, namespace: str, name: str) -> Obj | None:
        return self.claims.get((namespace, name))

    async def get_volume(self, name: str) -> Obj | None:
        return self.volumes.get(name)

    async def get_node_labels(self) -> dict[str, str]:
        return self.node_labels

    def bind(self, claim_name: str, volume_name: str, source: Obj,
             node: str | None = None) -> None:
        """A claim in ns Bound to a PV with `source` (pinned to `node` if given)."""
        uid = f"uid-{claim_name}"
        self.claims["ns", claim_name] = {
            "metadata": {"name": claim_name, "namespace": "ns", "uid": uid},
            "spec": {"volumeName": volume_name}, "status": {"phase": "Bound"}}
        spec: Obj = {**source, "claimRef": {"namespace": "ns", "name": claim_name, "uid": uid}}
        if node is not None:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
        self.volumes[volume_name] = {"metadata": {"name": volume_name}, "spec": spec}

    async def update_claim_status(self, claim: Obj) -> Obj:
        """PUT /status: the claim's status as written, one resourceVersion on."""
        key = (claim["metadata"]["namespace"], claim["metadata"]["name"])
        stored = self.claims[key]
        stored["status"] = copy.deepcopy(claim["status"])
        self.status_writes.append(copy.deepcopy(claim["status"]))
        return copy.deepcopy(stored)

    def record_event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        self.events.append((obj["kind"], obj["metadata"]["name"], event_type, reason, message))

    async def token(self, pod: Obj, audience: str, expiration: int) -> str:
        account = pod["spec"].get("serviceAccountName") or "default"
        self.token_requests.append((pod["metadata"]["namespace"], account, audience,
                                    expiration))
        return f"token-{len(self.token_requests)}"


@pytest.fixture
def cluster() -> Cluster:
    cluster = Cluster()
    cluster.config_maps["ns", "cfg"] = {"metadata": {"name": "cfg"},
                                        "data": {"app.conf": "mode=fast\n", "level": "3"},
                                        "binaryData": {"blob": b64(b"\x00\x01")}}
    cluster.secrets["ns", "creds"] = {"metadata": {"name": "creds"},
                                      "data": {"user": b64(b"admin"), "pass": b64(b"s3cr3t")}}
    return cluster


def manager(root: Path, cluster: Cluster, *, tokens: bool = True) -> VolumeManager:
    return VolumeManager(root / "pods", get_config_map=cluster.get_config_map,
                         get_secret=cluster.get_secret, get_claim=cluster.get_claim,
                         get_volume=cluster.get_volume, get_node_labels=cluster.get_node_labels,
                         get_service_account_token=cluster.token if tokens else None,
                         allocatable={"cpu": "2", "memory": "1Gi"}, node_name="node-1",
                         update_claim_status=cluster.update_claim_status,
                         record_event=cluster.record_event)


def make_pod(*volumes: Obj, uid: str = "uid-1", containers: list[Obj] | None = None) -> Obj:
    return {"metadata": {"name": "web", "namespace": "ns", "uid": uid,
                         "labels": {"app": "web", "tier": "front"}},
            "spec": {"serviceAccountName": "builder", "volumes": list(volumes),
                     "containers": containers or [{"name": "app", "resources": {
                         "limits": {"cpu": "500m", "memory": "128Mi"}}}]}}


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def fstype_of(path: Path) -> str:
    target = os.path.realpath(path)
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" ")
        if fields[4] == target:
            return fields[fields.index("-") + 1]
    return ""


def tmpfs_size(path: Path) -> int:
    """The size= option of the tmpfs mounted at path (the kernel shows it in KiB)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" ")
        if fields[4] == os.path.realpath(path):
            options = fields[-1].split(",")
            size = next(option for option in options if option.startswith("size="))
            return int(size.removeprefix("size=").removesuffix("k")) * 1024
    raise AssertionError(f"nothing mounted at {path}")


def data_dirs(volume: Path) -> list[str]:
    return sorted(p.name for p in volume.iterdir() if TIMESTAMPED.match(p.name))


# -- AtomicWriter -----------------------------------------------------------------------------

def test_atomic_writer_layout_links_visible_files_through_data(tmp_path: Path) -> None:
    written = AtomicWriter(tmp_path).write({
        "a": FileProjection(b"one", 0o644), "dir/b": FileProjection(b"two", 0o400)})
    assert written
    [data_dir] = data_dirs(tmp_path)
    assert os.readlink(tmp_path / "..data") == data_dir
    assert os.readlink(tmp_path / "a") == "..data/a"
    assert os.readlink(tmp_path / "dir") == "..data/dir"
    assert (tmp_path / "a").read_bytes() == b"one"
    assert (tmp_path / "dir" / "b").read_bytes() == b"two"
    assert mode_of(tmp_path / data_dir / "a") == 0o644
    assert mode_of(tmp_path / data_dir / "dir" / "b") == 0o400
    assert mode_of(tmp_path / data_dir) == 0o755


def test_atomic_writer_does_not_rewrite_an_unchanged_payload(tmp_path: Path) -> None:
    writer = AtomicWriter(tmp_path)
    writer.write({"a": FileProjection(b"one", 0o644)})
    before = data_dirs(tmp_path)
    assert writer.write({"a": FileProjection(b"one", 0o644)}) is False
    assert data_dirs(tmp_path) == before


def test_atomic_writer_update_swaps_data_and_removes_old_dir_and_dropped_files(
        tmp_path: Path) -> None:
    writer = AtomicWriter(tmp_path)
    writer.write({"a": FileProjection(b"one", 0o644), "gone": FileProjection(b"x", 0o644)})
    [old] = data_dirs(tmp_path)
    assert writer.write({"a": FileProjection(b"uno", 0o644), "new": FileProjection(b"n", 0o644)})
    [new] = data_dirs(tmp_path)
    assert new != old and not (tmp_path / old).exists()
    assert os.readlink(tmp_path / "..data") == new
    assert (tmp_path / "a").read_bytes() == b"uno"
    assert (tmp_path / "new").read_bytes() == b"n"
    assert not os.path.lexists(tmp_path / "gone")
    assert not os.path.lexists(tmp_path / "..data_tmp")


def test_readers_see_a_complete_version_at_every_moment(tmp_path: Path) -> None:
    writer = AtomicWriter(tmp_path)
    writer.write({"x": FileProjection(b"0", 0o644), "y": FileProjection(b"0", 0o644)})
    pairs: list[tuple[bytes, bytes]] = []
    superseded: list[bool] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                version = os.readlink(tmp_path / "..data")  # ..data is never missing
                try:
                    pairs.append(((tmp_path / version / "x").read_bytes(),
                                  (tmp_path / version / "y").read_bytes()))
                except FileNotFoundError:  # only once a newer version replaced it
                    superseded.append(os.readlink(tmp_path / "..data") != version)
        except BaseException as error:
            errors.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(1, 200):
        value = str(i).encode()
        writer.write({"x": FileProjection(value, 0o644), "y": FileProjection(value, 0o644)})
    done.set()
    reader.join()
    assert errors == [] and all(superseded)
    assert pairs and all(x == y for x, y in pairs)
    assert len(data_dirs(tmp_path)) == 1


@pytest.mark.parametrize(("path", "message"), [
    ("/etc/passwd", "invalid path: must be relative path: /etc/passwd"),
    ("a/../b", "invalid path: must not contain '..': a/../b"),
    ("..hidden", "invalid path: must not start with '..': ..hidden"),
    ("", 'invalid path: must not be empty: ""'),
    ("x" * 256, "invalid path: filenames must be less than or equal to 255 characters"),
])
def test_atomic_writer_refuses_unsafe_paths(tmp_path: Path, path: str, message: str) -> None:
    with pytest.raises(PayloadError) as raised:
        AtomicWriter(tmp_path).write({path: FileProjection(b"", 0o644)})
    assert str(raised.value) == message
    assert list(tmp_path.iterdir()) == []


# -- configMap and secret -----------------------------------------------------------------------

async def test_config_map_volume_projects_all_keys_with_default_mode(
        root: Path, cluster: Cluster) -> None:
    volumes = await manager(root, cluster).mount_pod_volumes(
        make_pod({"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 0o440}}))
    path = volumes["cfg"]
    assert path == root / "pods/uid-1/volumes/kubernetes.io~configmap/cfg"
    assert (path / "app.conf").read_text() == "mode=fast\n"
    assert (path / "blob").read_bytes() == b"\x00\x01"
    assert {mode_of(path / key) for key in ("app.conf", "level", "blob")} == {0o440}
    assert mode_of(path) == 0o777


async def test_items_pick_keys_with_their_own_path_and_mode(root: Path, cluster: Cluster) -> None:
    volumes = await manager(root, cluster).mount_pod_volumes(make_pod(
        {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 0o644, "items": [
            {"key": "level", "path": "conf/level.txt", "mode": 0o600},
            {"key": "app.conf", "path": "app.conf"}]}}))
    path = volumes["cfg"]
    assert sorted(p.name for p in path.iterdir() if not p.name.startswith("..")) == [
        "app.conf", "conf"]
    assert (path / "conf/level.txt").read_text() == "3"
    assert mode_of(path / "conf/level.txt") == 0o600
    assert mode_of(path / "app.conf") == 0o644


UNABLE = ("Unable to attach or mount volumes: unmounted volumes=[v], unattached volumes=[], "
          "failed to process volumes=[v]: ")


@pytest.mark.parametrize(("volume", "message"), [
    ({"configMap": {"name": "absent"}},
     'MountVolume.SetUp failed for volume "v" : configmap "absent" not found'),
    ({"secret": {"secretName": "absent"}},
     'MountVolume.SetUp failed for volume "v" : secret "absent" not found'),
    ({"configMap": {"name": "cfg", "items": [{"key": "nope", "path": "p"}]}},
     'MountVolume.SetUp failed for volume "v" : '
     "configmap references non-existent config key: nope"),
    ({"secret": {"secretName": "creds", "items": [{"key": "nope", "path": "p"}]}},
     'MountVolume.SetUp failed for volume "v" : references non-existent secret key: nope'),
    ({"persistentVolumeClaim": {"claimName": "absent"}},
     UNABLE + 'error processing PVC ns/absent: failed to fetch PVC from API server: '
     'persistentvolumeclaims "absent" not found'),
    ({"hostPath": {"path": "/does/not/exist", "type": "Directory"}},
     'MountVolume.SetUp failed for volume "v" : hostPath /does/not/exist doesn\'t exist'),
    ({"emptyDir": {"medium": "Disk"}},
     'MountVolume.SetUp failed for volume "v" : unknown storage medium "Disk"'),
    ({"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "spec.nodeName"}}]}},
     'MountVolume.SetUp failed for volume "v" : unsupported fieldPath: spec.nodeName'),
    ({"nfs": {"server": "s", "path": "/"}},
     UNABLE + 'failed to get Plugin from volumeSpec for volume "v" err=no volume plugin matched'),
])
async def test_volumes_that_cannot_be_set_up_fail_with_upstream_messages(
        root: Path, cluster: Cluster, volume: Obj, message: str) -> None:
    with pytest.raises(VolumeError) as raised:
        await manager(root, cluster).mount_pod_volumes(make_pod({"name": "v", **volume}))
    assert (raised.value.volume_name, str(raised.value)) == ("v", message)


@pytest.mark.parametrize("volume", [
    {"configMap": {"name": "absent", "optional": True}},
    {"secret": {"secretName": "absent", "optional": True}},
    {"configMap": {"name": "cfg", "optional": True, "items": [{"key": "nope", "path": "p"}]}},
])
async def test_optional_sources_that_are_missing_give_an_empty_volume(
        root: Path, cluster: Cluster, volume: Obj) -> None:
    path = (await manager(root, cluster).mount_pod_volumes(make_pod({"name": "v", **volume})))["v"]
    assert [p.name for p in path.iterdir() if not p.name.startswith("..")] == []
    assert (path / "..data").is_symlink()


async def test_secret_volume_is_decoded_onto_a_tmpfs_and_torn_down(
        root: Path, cluster: Cluster) -> None:
    volumes = manager(root, cluster)
    path = (await volumes.mount_pod_volumes(
        make_pod({"name": "s", "secret": {"secretName": "creds", "defaultMode": 0o400}})))["s"]
    assert path == root / "pods/uid-1/volumes/kubernetes.io~secret/s"
    assert fstype_of(path) == "tmpfs"
    assert (path / "pass").read_bytes() == b"s3cr3t"
    assert mode_of(path / "user") == 0o400
    await volumes.teardown_pod_volumes("uid-1")
    assert mount_points_under(root) == []
    assert not (root / "pods/uid-1/volumes").exists()


async def test_refresh_reprojects_changed_config_maps_only(root: Path, cluster: Cluster) -> None:
    volumes = manager(root, cluster)
    pod = make_pod({"name": "cfg", "configMap": {"name": "cfg"}})
    path = (await volumes.mount_pod_volumes(pod))["cfg"]
    assert await volumes.refresh(pod) is False
    cluster.config_maps["ns", "cfg"] = {"metadata": {"name": "cfg"}, "data": {"level": "4"}}
    assert await volumes.refresh(pod) is True
    assert (path / "level").read_text() == "4"
    assert not os.path.lexists(path / "app.conf")
    assert len(data_dirs(path)) == 1


async def test_a_failed_reprojection_keeps_the_old_content(root: Path, cluster: Cluster) -> None:
    volumes = manager(root, cluster)
    pod = make_pod({"name": "cfg", "configMap": {"name": "cfg"}})
    path = (await volumes.mount_pod_volumes(pod))["cfg"]
    del cluster.config_maps["ns", "cfg"]
    assert (await volumes.mount_pod_volumes(pod))["cfg"] == path
    assert (path / "level").read_text() == "3"
    with pytest.raises(VolumeError):
        await volumes.refresh(pod)


# -- downwardAPI and projected --------------------------------------------------------------------

async def test_downward_api_volume_writes_metadata_and_resources(
        root: Path, cluster: Cluster) -> None:
    volumes = manager(root, cluster)
    pod = make_pod({"name": "info", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}, "mode": 0o600},
        {"path": "mem", "resourceFieldRef": {"containerName": "app",
                                             "resource": "limits.memory", "divisor": "1Mi"}},
        {"path": "cpu", "resourceFieldRef": {"containerName": "app",
                                             "resource": "requests.cpu"}}]}})
    path = (await volumes.mount_pod_volumes(pod))["info"]
    assert path == root / "pods/uid-1/volumes/kubernetes.io~downward-api/info"
    assert (path / "labels").read_text() == 'app="web"\ntier="front"'
    assert (path / "name").read_text() == "web"
    assert mode_of(path / "name") == 0o600
    assert ((path / "mem").read_text(), (path / "cpu").read_text()) == ("128", "0")
    pod["metadata"]["labels"]["tier"] = "back"
    assert await volumes.refresh(pod) is True
    assert (path / "labels").read_text() == 'app="web"\ntier="back"'


async def test_projected_volume_combines_sources_on_a_tmpfs(root: Path, cluster: Cluster) -> None:
    volumes = manager(root, cluster)
    pod = make_pod({"name": "all", "projected": {"defaultMode": 0o644, "sources": [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
        {"configMap": {"name": "cfg", "items": [{"key": "level", "path": "level"}]}},
        {"secret": {"name": "creds", "items": [{"key": "user", "path": "user"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"fieldPath": "metadata.namespace"}}]}}]}})
    path = (await volumes.mount_pod_volumes(pod))["all"]
    assert fstype_of(path) == "tmpfs"
    assert {name: (path / name).read_text() for name in ("token", "level", "user", "namespace")} \
        == {"token": "token-1", "level": "3", "user": "admin", "namespace": "ns"}
    assert cluster.token_requests == [("ns", "builder", "", 3607)]
    assert await volumes.refresh(pod) is False  # the token is reused while fresh
    assert cluster.token_requests == [("ns", "builder", "", 3607)]


async def test_projected_token_is_skipped_without_a_token_source(
        root: Path, cluster: Cluster) -> None:
    pod = make_pod({"name": "all", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token"}},
        {"configMap": {"name": "cfg", "items": [{"key": "level", "path": "level"}]}}]}})
    path = (await manager(root, cluster, tokens=False).mount_pod_volumes(pod))["all"]
    assert not os.path.lexists(path / "token")
    assert (path / "level").read_text() == "3"


async def test_projected_volume_reports_every_failing_source(root: Path,
                                                             cluster: Cluster) -> None:
    pod = make_pod({"name": "all", "projected": {"sources": [
        {"configMap": {"name": "absent"}}, {"secret": {"name": "gone"}}]}})
    with pytest.raises(VolumeError) as raised:
        await manager(root, cluster).mount_pod_volumes(pod)
    assert str(raised.value) == ('MountVolume.SetUp failed for volume "all" : '
                                 '[configmap "absent" not found, secret "gone" not found]')


# -- emptyDir -----------------------------------------------------------------------------------

async def test_empty_dir_on_disk_is_a_world_writable_directory(root: Path,
                                                               cluster: Cluster) -> None:
    volumes = manager(root, cluster)
    path = (await volumes.mount_pod_volumes(make_pod({"name": "scratch", "emptyDir": {}})))[
        "scratch"]
    assert path == root / "pods/uid-1/volumes/kubernetes.io~empty-dir/scratch"
    assert path.is_dir() and mode_of(path) == 0o777 and not os.path.ismount(path)
    (path / "kept").write_text("x")
    await volumes.mount_pod_volumes(make_pod({"name": "scratch", "emptyDir": {}}))
    assert (path / "kept").read_text() == "x"


@pytest.mark.parametrize(("size_limit", "expected_size"), [
    (None, 128 * MI),    # the pod's memory limit, below the 1Gi allocatable
    ("64Mi", 64 * MI),   # the volume's own limit, smaller still
    ("4Gi", 128 * MI),   # a limit above what the pod may use does not count
])
async def test_memory_empty_dir_mounts_a_sized_tmpfs_until_teardown(
        root: Path, cluster: Cluster, size_limit: str | None, expected_size: int) -> None:
    volumes = manager(root, cluster)
    source = {"medium": "Memory", **({"sizeLimit": size_limit} if size_limit else {})}
    path = (await volumes.mount_pod_volumes(make_pod({"name": "mem", "emptyDir": source})))["mem"]
    assert fstype_of(path) == "tmpfs"
    assert tmpfs_size(path) == expected_size
    await volumes.mount_pod_volumes(make_pod({"name": "mem", "emptyDir": source}))
    assert len(mount_points_under(path)) == 1  # mounting again is a no-op
    await volumes.teardown_pod_volumes("uid-1")
    assert mount_points_under(root) == []
    assert not path.exists()


# -- hostPath -------------------------------------------------------------------------------------

@pytest.fixture
def host(tmp_path: Path) -> Path:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "sock"))
    listener.close()
    return tmp_path


@pytest.mark.parametrize(("name", "path_type", "error"), [
    ("dir", "Directory", None),
    ("file", "File", None),
    ("sock", "Socket", None),
    ("dir", "DirectoryOrCreate", None),
    ("new/deep/dir", "DirectoryOrCreate", None),
    ("file", "FileOrCreate", None),
    ("newfile", "FileOrCreate", None),
    ("missing", "Directory", "hostPath {p} doesn't exist"),
    ("missing", "Socket", "hostPath {p} doesn't exist"),
    ("file", "Directory", "hostPath type check failed: {p} is not a directory, it's a File"),
    ("dir", "File", "hostPath type check failed: {p} is not a file, it's a Directory"),
    ("dir", "FileOrCreate", "hostPath type check failed: {p} is not a file, it's a Directory"),
    ("file", "DirectoryOrCreate",
     "hostPath type check failed: {p} is not a directory, it's a File"),
    ("file", "Socket", "hostPath type check failed: {p} is not a socket file, it's a File"),
    ("file", "CharDevice",
     "hostPath type check failed: {p} is not a character device, it's a File"),
    ("sock", "BlockDevice",
     "hostPath type check failed: {p} is not a block device, it's a Socket"),
    ("no/parent/file", "FileOrCreate", "open {p}: no such file or directory"),
    ("file", "Fifo", "Fifo is an invalid volume type"),
])
def test_host_path_types_are_checked_like_upstream(host: Path, name: str, path_type: str,
                                                   error: str | None) -> None:
    path = str(host / name)
    if error is None:
        check_type(path, path_type)
        assert os.path.exists(path)
    else:
        with pytest.raises(SetUpError) as raised:
            check_type(path, path_type)
        assert str(raised.value) == error.format(p=path)


def test_char_devices_pass_the_char_device_check() -> None:
    check_type("/dev/null", "CharDevice")
    with pytest.raises(SetUpError, match="is not a block device, it's a CharDevice"):
        check_type("/dev/null", "BlockDevice")


async def test_host_path_volume_is_the_node_path_itself(root: Path, host: Path,
                                                        cluster: Cluster) -> None:
    volumes = await manager(root, cluster).mount_pod_volumes(make_pod(
        {"name": "h", "hostPath": {"path": str(host / "made"), "type": "DirectoryOrCreate"}},
        {"name": "raw", "hostPath": {"path": str(host / "whatever"), "type": ""}}))
    assert volumes == {"h": host / "made", "raw": host / "whatever"}
    assert (host / "made").is_dir() and mode_of(host / "made") & 0o755 == 0o755
    assert not (host / "whatever").exists()


async def test_host_path_with_backsteps_is_refused(root: Path, cluster: Cluster) -> None:
    with pytest.raises(VolumeError, match=r"invalid HostPath `/a/\.\./etc`: must not contain"):
        await manager(root, cluster).mount_pod_volumes(
            make_pod({"name": "h", "hostPath": {"path": "/a/../etc"}}))


# -- persistentVolumeClaim -----------------------------------------------------------------------

async def test_claim_mounts_the_host_path_of_its_bound_volume(root: Path,
                                                               cluster: Cluster) -> None:
    data = root / "node/pvc-1"
    cluster.bind("data", "pvc-1", {"hostPath": {"path": str(data), "type": "DirectoryOrCreate"}},
                 node="node-1")
    volumes = manager(root, cluster)
    pod = make_pod({"name": "d", "persistentVolumeClaim": {"claimName": "data"}})
    path = (await volumes.mount_pod_volumes(pod))["d"]
    assert path == data and path.is_dir()
    (path / "row").write_text("1")
    await volumes.teardown_pod_volumes("uid-1")
    await volumes.cleanup_orphans(set())
    again = (await volumes.mount_pod_volumes(make_pod(pod["spec"]["volumes"][0], uid="uid-2")))
    assert (again["d"] / "row").read_text() == "1"


class Collect:
    def __init__(self) -> None:
        self.spans: list[Span] = []

    def export(self, span: Span) -> None:
        self.spans.append(span)


async def test_a_claims_first_mount_is_a_span_of_the_pods_sync(root: Path,
                                                                cluster: Cluster) -> None:
    """MountVolume.SetUp, under the kubelet's SyncPod: the volume, its PV and the node
    path; a later sync of the mounted pod is no new mount."""
    data = root / "node/pvc-1"
    cluster.bind("data", "pvc-1", {"hostPath": {"path": str(data), "type": "DirectoryOrCreate"}},
                 node="node-1")
    volumes = manager(root, cluster)
    pod = make_pod({"name": "d", "persistentVolumeClaim": {"claimName": "data"}})
    collected = Collect()
    kubelet = Tracer("kubelet", collected)
    with kubelet.span("SyncPod") as sync:
        await volumes.mount_pod_volumes(pod)
    with kubelet.span("SyncPod"):
        await volumes.mount_pod_volumes(pod)
    mounts = [span for span in collected.spans if span.name == "MountVolume.SetUp"]
    assert len(mounts) == 1
    assert mounts[0].parent_id == sync.context.span_id
    assert mounts[0].attributes == {"volume": "d", "persistentvolume": "pvc-1",
                                    "path": str(data)}
    await volumes.teardown_pod_volumes("uid-1")


def grown(cluster: Cluster, status: str = "NodeResizePending") -> None:
    """The resizer's work on claim "data": its PV at 2Gi, the claim at 1Gi waiting for
    the node's part."""
    cluster.volumes["pvc-1"]["spec"]["capacity"] = {"storage": "2Gi"}
    cluster.claims["ns", "data"]["spec"]["resources"] = {"requests": {"storage": "2Gi"}}
    cluster.claims["ns", "data"]["status"] = {
        "phase": "Bound", "capacity": {"storage": "1Gi"},
        "allocatedResources": {"storage": "2Gi"},
        "allocatedResourceStatuses": {"storage": status},
        "conditions": [{"type": "FileSystemResizePending", "status": "True",
                        "lastProbeTime": None, "lastTransitionTime": "2026-11-29T06:00:00Z",
                        "message": "Waiting for user to (re-)start a pod to finish file "
                                   "system resize of volume on node."}]}


@pytest.mark.parametrize("online", [False, True])
async def test_a_claim_grown_by_its_resizer_is_finished_by_the_kubelet_that_mounts_it(
        root: Path, cluster: Cluster, online: bool) -> None:
    cluster.bind("data", "pvc-1", {"hostPath": {"path": str(root / "pvc-1"),
                                                "type": "DirectoryOrCreate"}})
    volumes = manager(root, cluster)
    pod = make_pod({"name": "d", "persistentVolumeClaim": {"claimName": "data"}})
    if online:  # mounted first, grown while the pod runs: the next sync finishes it
        await volumes.mount_pod_volumes(pod)
    grown(cluster)

    await volumes.mount_pod_volumes(pod)

    assert [w["allocatedResourceStatuses"] for w in cluster.status_writes[:1]] == [
        {"storage": "NodeResizeInProgress"}]
    assert cluster.claims["ns", "data"]["status"] == {
        "phase": "Bound", "capacity": {"storage": "2Gi"},
        "allocatedResources": {"storage": "2Gi"}}
    message = 'MountVolume.NodeExpandVolume succeeded for volume "pvc-1" node-1'
    assert cluster.events == [("Pod", "web", "Normal", "FileSystemResizeSuccessful", message),
                              ("PersistentVolumeClaim", "data", "Normal",
                               "FileSystemResizeSuccessful", message)]
    await volumes.mount_pod_volumes(pod)
    assert len(cluster.status_writes) == 2  # done: the next sync writes nothing


@pytest.mark.parametrize("status", ["ControllerResizeInProgress", ""])
async def test_the_kubelet_leaves_a_claim_whose_controller_part_is_not_done(
        root: Path, cluster: Cluster, status: str) -> None:
    cluster.bind("data", "pvc-1", {"hostPath": {"path": str(root / "pvc-1"),
                                                "type": "DirectoryOrCreate"}})
    grown(cluster, status)
    pod = make_pod({"name": "d", "persistentVolumeClaim": {"claimName": "data"}})
    await manager(root, cluster).mount_pod_volumes(pod)
    assert cluster.status_writes == [] and cluster.events == []


async def test_claim_mounts_an_existing_local_volume_of_this_node(root: Path,
                                                                 cluster: Cluster) -> None:
    (root / "disk").mkdir()
    cluster.bind("data", "local-1", {"local": {"path": str(root / "disk")}}, node="node-1")
    pod = make_pod({"name": "d", "persistentVolumeClaim": {"claimName": "data"}})
    assert (await manager(root, cluster).mount_pod_volumes(pod))["d"] == root / "disk"


@pytest.mark.parametrize(("claim", "volume", "message"), [
    ({"status": {"phase": "Pending"}}, None,
     UNABLE.replace("[v]", "[d]") + "error processing PVC ns/data: PVC is not bound"),
    ({"spec": {}}, None, UNABLE.replace("[v]", "[d]")
     + "error processing PVC ns/data: PVC has empty pvc.Spec.VolumeName"),
    ({"metadata": {"name": "data", "uid": "c", "deletionTimestamp": "2026-11-22T04:00:00Z"}},
     None, UNABLE.replace("[v]", "[d]") + "error processing PVC ns/data: PVC is being deleted"),
    ({"spec": {"volumeName": "gone"}}, None, UNABLE.replace("[v]", "[d]")
     + "error processing PVC ns/data: failed to fetch PV gone from API server: "
       'persistentvolumes "gone" not found'),
    ({}, {"claimRef": None}, UNABLE.replace("[v]", "[d]")
     + "error processing PVC ns/data: found PV object pv-1 but it has a nil pv.Spec.ClaimRef "
       "indicating it is not yet bound to the claim"),
    ({}, {"claimRef": {"namespace": "ns", "name": "data", "uid": "other"}},
     UNABLE.replace("[v]", "[d]") + "error processing PVC ns/data: found PV object pv-1 but "
     "its pv.Spec.ClaimRef.UID (other) does not point to claim.UID (uid-data)"),
    ({}, {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-2"]}]}]}}},
     'MountVolume.NodeAffinity check failed for volume "pv-1" : no matching NodeSelectorTerms'),
    ({}, {"hostPath": None, "local": {"path": "/does/not/exist"}},
     'MountVolume.NewMounter initialization failed for volume "pv-1" : '
     'path "/does/not/exist" does not exist'),
    ({}, {"hostPath": {"path": "/does/not/exist", "type": "Directory"}},
     'MountVolume.SetUp failed for volume "pv-1" : hostPath /does/not/exist doesn\'t exist'),
])
async def test_claims_that_cannot_be_mounted_wait_with_upstream_messages(
        root: Path, cluster: Cluster, claim: Obj, volume: Obj | None, message: str) -> None:
    cluster.bind("data", "pv-1", {"hostPath": {"path": str(root / "pv")}})
    for field, value in claim.items():
        cluster.claims["ns", "data"][field] = value
    for field, value in (volume or {}).items():
        spec = cluster.volumes["pv-1"]["spec"]
        if value is None:
            del spec[field]
        else:
            spec[field] = value
    with pytest.raises(VolumeError) as raised:
        await manager(root, cluster).mount_pod_volumes(
            make_pod({"name": "d", "persistentVolumeClaim": {"claimName": "data"}}))
    assert (raised.value.volume_name, str(raised.value)) == ("d", message)


# -- container mounts ---------------------------------------------------------------------------

async def test_container_mounts_handle_read_only_propagation_and_termination_message(
        root: Path, cluster: Cluster) -> None:
    cluster.bind("data", "pv-1", {"hostPath": {"path": str(root / "pv"),
                                               "type": "DirectoryOrCreate"}})
    volumes = manager(root, cluster)
    container = {"name": "app", "volumeMounts": [
        {"name": "cfg", "mountPath": "/etc/app"},
        {"name": "scratch", "mountPath": "/tmp/s", "mountPropagation": "HostToContainer"},
        {"name": "scratch", "mountPath": "/ro", "readOnly": True},
        {"name": "data", "mountPath": "/data"}]}
    pod = make_pod({"name": "cfg", "configMap": {"name": "cfg"}},
                   {"name": "scratch", "emptyDir": {}},
                   {"name": "data", "persistentVolumeClaim": {"claimName": "data",
                                                              "readOnly": True}},
                   containers=[container])
    paths = await volumes.mount_pod_volumes(pod)
    mounts = volumes.container_mounts(pod, container, paths, {})
    assert mounts[:4] == [
        ContainerMount("/etc/app", paths["cfg"], readonly=True),
        ContainerMount("/tmp/s", paths["scratch"], propagation="HostToContainer"),
        ContainerMount("/ro", paths["scratch"], readonly=True),
        ContainerMount("/data", paths["data"], readonly=True)]
    message = mounts[4]
    assert message.container_path == "/dev/termination-log" and not message.readonly
    assert message.host_path.parent == root / "pods/uid-1/containers/app"
    assert message.host_path.read_bytes() == b"" and mode_of(message.host_path) == 0o666
    again = volumes.container_mounts(pod, container, paths, {})[4]
    assert again.host_path != message.host_path  # one file per container instance


async def test_sub_paths_are_created_inside_the_volume(root: Path, cluster: Cluster) -> None:
    volumes = manager(root, cluster)
    container = {"name": "app", "terminationMessagePath": "/msg", "volumeMounts": [
        {"name": "scratch", "mountPath": "/logs", "subPathExpr": "$(POD_NAME)/logs"},
        {"name": "cfg", "mountPath": "/etc/level", "subPath": "level"}]}
    pod = make_pod({"name": "scratch", "emptyDir": {}},
                   {"name": "cfg", "configMap": {"name": "cfg"}}, containers=[container])
    paths = await volumes.mount_pod_volumes(pod)
    logs, level, message = volumes.container_mounts(pod, container, paths, {"POD_NAME": "web"})
    assert logs.host_path == paths["scratch"] / "web/logs" and logs.host_path.is_dir()
    assert level.readonly and level.host_path.read_text() == "3"
    assert level.host_path.parent.parent == paths["cfg"]  # resolved into the data dir
    assert message.container_path == "/msg"


@pytest.mark.parametrize(("volume_mount", "env", "message"), [
    ({"subPathExpr": "$(A)/$(B)-$(C)"}, {"A": "a", "B": ""},
     "missing value for B, C"),
    ({"subPath": "/abs"}, {}, "error SubPath `/abs` must not be an absolute path"),
    ({"subPath": "a/../../etc"}, {},
     "unable to provision SubPath `a/../../etc`: must not contain '..'"),
    ({"subPath": "escape"}, {},
     'failed to prepare subPath for volumeMount "scratch" of container "app"'),
    ({"mountPropagation": "Sideways"}, {}, 'invalid MountPropagation mode: "Sideways"'),
    ({"name": "nope"}, {}, 'cannot find volume "nope" to mount into container "app"'),
])
async def test_bad_mounts_are_container_config_errors(
        root: Path, cluster: Cluster, volume_mount: Obj, env: dict[str, str],
        message: str) -> None:
    volumes = manager(root, cluster)
    pod = make_pod({"name": "scratch", "emptyDir": {}})
    paths = await volumes.mount_pod_volumes(pod)
    (paths["scratch"] / "escape").symlink_to("/etc")
    container = {"name": "app", "volumeMounts": [
        {"name": "scratch", "mountPath": "/m", **volume_mount}]}
    with pytest.raises(ContainerConfigError) as raised:
        volumes.container_mounts(pod, container, paths, env)
    assert str(raised.value) == message


# -- teardown and orphans ----------------------------------------------------------------------

async def test_cleanup_orphans_unmounts_and_removes_dead_pods_only(root: Path,
                                                                   cluster: Cluster) -> None:
    volumes = manager(root, cluster)
    for uid in ("live", "dead"):
        pod = make_pod({"name": "s", "secret": {"secretName": "creds"}},
                       {"name": "mem", "emptyDir": {"medium": "Memory"}}, uid=uid)
        await volumes.mount_pod_volumes(pod)
        volumes.container_mounts(pod, pod["spec"]["containers"][0], {}, {})
    assert len(mount_points_under(root)) == 4
    await volumes.cleanup_orphans({"live"})
    assert not (root / "pods/dead").exists()
    assert len(mount_points_under(root / "pods/live")) == 2
    assert (root / "pods/live/containers/app").is_dir()
    await volumes.teardown_pod_volumes("live")
    assert mount_points_under(root) == []
    assert (root / "pods/live/containers/app").is_dir()  # kept for the status


async def test_ephemeral_volume_usage_counts_blocks_as_du_does(root: Path, cluster: Cluster
                                                               ) -> None:
    volumes = manager(root, cluster)
    pod = make_pod({"name": "cache", "emptyDir": {"sizeLimit": "1Mi"}},
                   {"name": "conf", "configMap": {"name": "missing", "optional": True}})
    paths = await volumes.mount_pod_volumes(pod)
    empty = await volumes.ephemeral_volume_usage(pod)
    assert list(empty) == ["cache", "conf"]  # emptyDir and configMap volumes only
    (paths["cache"] / "sub").mkdir()
    (paths["cache"] / "sub" / "blob").write_bytes(os.urandom(3 * 1024 * 1024))
    os.link(paths["cache"] / "sub" / "blob", paths["cache"] / "again")  # counted once
    used = (await volumes.ephemeral_volume_usage(pod))["cache"]
    assert 3 * 1024 * 1024 <= used - empty["cache"] < 3 * 1024 * 1024 + 64 * 1024
