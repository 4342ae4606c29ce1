"""A node's container runtime: its own containerd, CNI bridge network, and a clean teardown.

Upstream a node is prepared by its installer (kubeadm's preflight, minikube's provisioner):
containerd with the CRI plugin, a CNI network config, and the kubelet pointed at the
runtime with --container-runtime-endpoint. Here several nodes share one machine, so each
gets everything of its own under one base directory:

    <base_dir>/config.toml        containerd's config (version 2)
    <base_dir>/containerd.sock    the CRI endpoint (unix://...); containerd.sock.ttrpc
    <base_dir>/containerd.log     containerd's log
    <base_dir>/root/, state/      containerd's persistent and runtime state (images, pods)
    <base_dir>/cni/net.d/         the CNI network: a "bridge" on the node's pod CIDR
    <base_dir>/cni/networks/      host-local IPAM: which pod IPs are in use

Containerd.stop() leaves nothing behind: no pod, shim, mount, bridge, iptables rule, nor
any of these files. (The node's kubelet may keep its own directory in base_dir; that
stays.) containerd itself may die or be restarted at any time: each container runs under
its own shim (containerd-shim-runc-v2, in a process group of its own), which outlives
containerd, and the next start() with the same config re-attaches to every shim it
finds in state/: the same containers, with the same ids and processes, keep running.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import hashlib
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minikube_py.cri import CRIError, RemoteRuntime
from minikube_py.gen.cri import api_pb2
from minikube_py.process import ComponentProcess, ComponentProcessError

SANDBOX_IMAGE = "localhost/pause:3.9"
CNI_BIN_DIR = Path("/usr/lib/cni")
CRI_NAMESPACE = "k8s.io"
"""The containerd namespace the CRI plugin keeps its images, sandboxes and containers in."""

CNI_PLUGINS = ("bridge", "host-local", "portmap", "loopback")
REQUIRED_COMMANDS = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "ip",
                     "iptables-save", "iptables-restore")
CNI_CACHE_DIR = Path("/var/lib/cni/results")
"""Where libcni (inside containerd) caches each attachment's result; not configurable in 1.6."""

CNI_CONTAINER_CHAIN = re.compile(r"CNI-(?:DN-)?[0-9a-f]{24}")
"""The per-attachment nat chains: bridge's ipMasq chain and portmap's DNAT chain. The shared
CNI-HOSTPORT-* chains belong to every network on the machine and are left alone."""

# What a node's runtime owns in base_dir; the kubelet may keep its own directory there too.
CONFIG_FILE = "config.toml"
SOCKET_FILE = "containerd.sock"
LOG_FILE = "containerd.log"
ROOT_DIR = "root"
STATE_DIR = "state"
CNI_DIR = "cni"
HOSTS_DIR = "certs.d"
OWNED_PATHS = (CONFIG_FILE, SOCKET_FILE, f"{SOCKET_FILE}.ttrpc", LOG_FILE, ROOT_DIR, STATE_DIR,
               CNI_DIR, HOSTS_DIR)

MIRRORED_REGISTRIES = ("docker.io", "registry.k8s.io", "localhost")
"""The registries whose images the cluster's own registry serves, and it alone: each gets
a hosts.toml whose only host is the local registry, so no pull ever leaves the machine."""
HOSTS_TOML = """\
# Written by minikube_py.cluster.runtime_setup: {name} images come from the cluster's
# registry, and from nowhere else.
server = "http://{registry}"

[host."http://{registry}"]
  capabilities = ["pull", "resolve"]
"""

CRI_STOP_TIMEOUT = 20.0
"""Seconds a StopPodSandbox / RemovePodSandbox may take during stop()."""

# Snapshotters that need what this machine lacks (an aufs module, a btrfs or zfs file
# system, a devmapper pool), and the /opt plugin, which would create /opt/containerd.
# (io.containerd.runtime.v1.linux stays: containerd 1.6's tasks service needs it.)
DISABLED_PLUGINS = (
    "io.containerd.internal.v1.opt",
    "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.btrfs",
    "io.containerd.snapshotter.v1.devmapper",
    "io.containerd.snapshotter.v1.zfs",
)

CONTAINERD_CONFIG = """\
# containerd of minikube-py node {node}; written by minikube_py.cluster.runtime_setup.
version = 2
root = {root}
state = {state}
disabled_plugins = {disabled_plugins}

[grpc]
  address = {socket}

[ttrpc]
  address = {ttrpc_socket}

[debug]
  level = "info"

[plugins."io.containerd.gc.v1.scheduler"]
  # With the default (0.02) the scheduler wakes again after 49 times the last collection's
  # length: on a small metadata database a few milliseconds, so an idle containerd woke a
  # few hundred times a second (20 ms of CPU each second). 0 keeps its first interval, one
  # second: what deletions left is collected within a second, and an idle daemon sleeps.
  pause_threshold = 0.0

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = {sandbox_image}
  # No CAP_SYS_RESOURCE on this machine: without this, runc fails every RunPodSandbox
  # with "can't get final child's PID from pipe" (it may not lower oom_score_adj).
  restrict_oom_score_adj = true
  # Pod network namespaces under state/, not /var/run/netns, so teardown finds them.
  netns_mounts_under_state_dir = true
  max_container_log_line_size = 16384

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = {snapshotter}
    default_runtime_name = "runc"
    # A pulled layer's blob is dropped from the content store once it is unpacked: the
    # snapshot is what containers run from, and the blob (uncompressed, as the project's
    # images ship them) would hold the same bytes a second time.
    discard_unpacked_layers = true

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        # runc's container state (default /run/containerd/runc) under state/ too.
        Root = {runc_root}

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = {cni_bin_dir}
    conf_dir = {cni_conf_dir}
    max_conf_num = 1

  [plugins."io.containerd.grpc.v1.cri".registry]
    # One hosts.toml per mirrored registry, pointing at the cluster's registry (none:
    # images come from `minikube-py image load` only).
    config_path = {hosts_dir}
"""

# Pod networks are /24s of this range, one per node.
POD_NETWORKS = ipaddress.ip_network("10.244.0.0/16")


class ContainerdError(ComponentProcessError):
    """A node's containerd could not be set up, started or torn down."""


class ImageLoadError(Exception):
    """An image archive could not be imported into a node's containerd."""


@dataclass(frozen=True)
class NodeRuntimeConfig:
    """Where a node's containerd and CNI network live, and what they are configured with."""

    node_name: str
    base_dir: Path
    pod_cidr: str
    sandbox_image: str = SANDBOX_IMAGE
    cni_bin_dir: Path = CNI_BIN_DIR
    registry: str = ""
    """host:port of the cluster's registry, for docker.io, registry.k8s.io and localhost."""
    netns: Path | None = None
    """The node's network namespace (its /var/run/netns file), where containerd runs and
    its CNI plugins build the pod network; None: this machine's own."""

    def __post_init__(self) -> None:
        ipaddress.ip_network(self.pod_cidr)  # a ValueError now beats a CNI error per pod
        # Absolute: containerd needs it, and teardown finds processes by these paths.
        object.__setattr__(self, "base_dir", Path(self.base_dir).absolute())

    @property
    def bridge_name(self) -> str:
        """The node's Linux bridge: "mkpy-" and a hash of the node's name and directory
        (<= 15 chars), so two clusters with a node of the same name do not share one."""
        key = f"{self.base_dir.absolute()}:{self.node_name}"
        return "mkpy-" + hashlib.sha256(key.encode()).hexdigest()[:8]

    @property
    def network_name(self) -> str:
        """The CNI network's name, which the plugins write into iptables rule comments."""
        return f"minikube-py-{self.node_name}"

    @property
    def config_path(self) -> Path:
        return self.base_dir / CONFIG_FILE

    @property
    def hosts_dir(self) -> Path:
        """containerd's registry config_path: <registry>/hosts.toml files."""
        return self.base_dir / HOSTS_DIR

    @property
    def socket(self) -> Path:
        return self.base_dir / SOCKET_FILE

    @property
    def endpoint(self) -> str:
        """The kubelet's --container-runtime-endpoint, e.g. unix:///.../containerd.sock."""
        return f"unix://{self.socket}"

    @property
    def log_path(self) -> Path:
        return self.base_dir / LOG_FILE

    @property
    def root_dir(self) -> Path:
        return self.base_dir / ROOT_DIR

    @property
    def state_dir(self) -> Path:
        return self.base_dir / STATE_DIR

    @property
    def cni_conf_dir(self) -> Path:
        return self.base_dir / CNI_DIR / "net.d"

    @property
    def ipam_data_dir(self) -> Path:
        return self.base_dir / CNI_DIR / "networks"


# -- configuration files -------------------------------------------------------------------

# mount(2) and umount2(2) straight from libc: no mount/umount binaries needed.
_libc = ctypes.CDLL(None, use_errno=True)
MNT_DETACH = 2


def overlayfs_works(directory: Path) -> bool:
    """Whether an overlay mount with its upper layer in directory works (it does on ext4
    and tmpfs; it does not on another overlay). containerd makes the same test."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".overlay-check-", dir=directory) as scratch:
        lower, upper, work, merged = (Path(scratch, part) for part in
                                      ("lower", "upper", "work", "merged"))
        for path in (lower, upper, work, merged):
            path.mkdir()
        options = f"lowerdir={lower},upperdir={upper},workdir={work}"
        if _libc.mount(b"overlay", bytes(merged), b"overlay", 0, options.encode()) != 0:
            return False
        _libc.umount2(bytes(merged), 0)
        return True


def write_containerd_config(cfg: NodeRuntimeConfig) -> Path:
    """Write the node's containerd config.toml: the CRI plugin on runc with the node's CNI
    dirs, and the overlayfs snapshotter where it works here, else native (plain copies)."""
    cfg.root_dir.mkdir(parents=True, exist_ok=True)
    cfg.state_dir.mkdir(parents=True, exist_ok=True)
    snapshotter = "overlayfs" if overlayfs_works(cfg.root_dir) else "native"
    quoted = json.dumps  # a JSON string is a valid TOML basic string
    if cfg.registry:
        for name in MIRRORED_REGISTRIES:
            (cfg.hosts_dir / name).mkdir(parents=True, exist_ok=True)
            (cfg.hosts_dir / name / "hosts.toml").write_text(
                HOSTS_TOML.format(name=name, registry=cfg.registry))
    cfg.config_path.write_text(CONTAINERD_CONFIG.format(
        node=cfg.node_name,
        root=quoted(str(cfg.root_dir)),
        state=quoted(str(cfg.state_dir)),
        disabled_plugins=quoted(list(DISABLED_PLUGINS)),
        socket=quoted(str(cfg.socket)),
        ttrpc_socket=quoted(f"{cfg.socket}.ttrpc"),
        sandbox_image=quoted(cfg.sandbox_image),
        snapshotter=quoted(snapshotter),
        runc_root=quoted(str(cfg.state_dir / "runc")),
        cni_bin_dir=quoted(str(cfg.cni_bin_dir)),
        cni_conf_dir=quoted(str(cfg.cni_conf_dir)),
        hosts_dir=quoted(str(cfg.hosts_dir) if cfg.registry else ""),
    ))
    return cfg.config_path


def configured_snapshotter(config_path: Path) -> str:
    """The snapshotter the CRI plugin uses, as write_containerd_config chose it."""
    with config_path.open("rb") as config:
        settings = tomllib.load(config)
    return settings["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["snapshotter"]


def cni_network(cfg: NodeRuntimeConfig) -> dict[str, Any]:
    """The node's CNI network config list: a bridge with host-local IPAM on the pod CIDR,
    then portmap for hostPort. (containerd adds the loopback plugin by itself.)"""
    return {
        "cniVersion": "1.0.0",
        "name": cfg.network_name,
        "plugins": [
            {
                "type": "bridge",
                "bridge": cfg.bridge_name,
                "isGateway": True,
                # In a node's own namespace, pods reach other nodes' pods and the host by
                # routes, with their own addresses (no NAT between pods, as Kubernetes
                # asks); on the host's, pods leave through its address.
                "ipMasq": cfg.netns is None,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": cfg.pod_cidr}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(cfg.ipam_data_dir),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def write_cni_config(cfg: NodeRuntimeConfig) -> Path:
    """Write the node's CNI network config list into its own CNI conf dir."""
    cfg.cni_conf_dir.mkdir(parents=True, exist_ok=True)
    path = cfg.cni_conf_dir / "10-minikube-py.conflist"
    path.write_text(json.dumps(cni_network(cfg), indent=2) + "\n")
    return path


# -- containerd ------------------------------------------------------------------------------

class Containerd(ComponentProcess):
    """A node's containerd: the container runtime its kubelet drives over CRI.

    `async with Containerd(cfg) as runtime:` writes the configs, starts containerd and
    waits until its CRI service answers; leaving the block removes every pod and all
    trace of the node (see stop()).
    """

    component = "containerd"
    error = ContainerdError

    def __init__(self, config: NodeRuntimeConfig, *, log_path: Path | None = None,
                 pid_file: Path | None = None, start_timeout: float = 30.0,
                 stop_timeout: float = 10.0, keep_images: bool = False) -> None:
        """keep_images: stop() leaves containerd's root (its images, unpacked), as a node
        that reboots keeps /var/lib/containerd: the next start pulls and unpacks nothing."""
        super().__init__(log_path or config.log_path, start_timeout=start_timeout,
                         stop_timeout=stop_timeout, pid_file=pid_file, netns=config.netns)
        self.config = config
        self.keep_images = keep_images

    @property
    def endpoint(self) -> str:
        """The CRI endpoint for the kubelet: unix://<base_dir>/containerd.sock."""
        return self.config.endpoint

    def command(self) -> list[str]:
        return ["containerd", "--config", str(self.config.config_path)]

    def prepare(self) -> None:
        """The tools are installed; write config.toml and the CNI network config."""
        missing = [name for name in REQUIRED_COMMANDS if shutil.which(name) is None]
        missing += [str(self.config.cni_bin_dir / plugin) for plugin in CNI_PLUGINS
                    if not (self.config.cni_bin_dir / plugin).is_file()]
        if missing:
            raise ContainerdError(
                f"missing {', '.join(missing)}: install containerd, runc, "
                "containernetworking-plugins, iproute2 and iptables (`make apt`)")
        self.config.base_dir.mkdir(parents=True, exist_ok=True)
        write_containerd_config(self.config)
        write_cni_config(self.config)
        super().prepare()

    async def start(self) -> None:
        """Start containerd (or wait for the running daemon the pid file names). The
        containers of an earlier containerd of this node keep running: the new one finds
        them in root/ and state/ and re-attaches to their shims, as upstream's does."""
        if self.running:
            return
        if self.adopt():
            await self.wait_ready()
            return
        if await socket_answers(self.config.socket):
            raise ContainerdError(f"a containerd already serves {self.config.socket}; "
                                  "stop that node first")
        # a containerd of this node that no pid file names and that does not answer (it
        # would hold root/'s database): stopped, its shims left alone
        await _kill_and_wait(_processes_with_argument(self.config.config_path))
        await super().start()

    async def serving(self) -> bool:
        """CRI answers Version on the socket."""
        if not await socket_answers(self.config.socket):
            return False
        async with RemoteRuntime(self.endpoint) as runtime:
            return await _cri_answers(runtime)

    async def wait_ready(self) -> None:
        """Wait for the socket, then poll CRI's Version until the CRI plugin has initialised.

        (A gRPC channel that finds no socket backs off for a second before it retries.)
        """
        await self.poll_until_ready(lambda: socket_answers(self.config.socket), interval=0.02)
        async with RemoteRuntime(self.endpoint) as runtime:
            await self.poll_until_ready(lambda: _cri_answers(runtime), interval=0.05)

    async def stop(self) -> None:
        """Remove every pod sandbox through CRI (so CNI releases their IPs and iptables
        rules), stop containerd, then remove whatever is left: containers, shims,
        mounts, the bridge, CNI rules and cache entries, and the runtime's files."""
        if self.running:
            await remove_pod_sandboxes(self.endpoint)
        await super().stop()
        await _remove_node_runtime(self.config.base_dir, self.config.network_name,
                                   self.config.bridge_name, self.config.netns,
                                   keep=(ROOT_DIR,) if self.keep_images else ())


async def remove_pod_sandboxes(endpoint: str) -> None:
    """StopPodSandbox and RemovePodSandbox for every sandbox, as a draining kubelet would
    (CNI then releases their IPs and iptables rules)."""
    async with RemoteRuntime(endpoint) as runtime:
        try:
            listed = await runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest())
        except CRIError:
            return

        async def remove(sandbox_id: str) -> None:
            with contextlib.suppress(CRIError):
                await runtime.stop_pod_sandbox(
                    api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox_id),
                    timeout=CRI_STOP_TIMEOUT)
                await runtime.remove_pod_sandbox(
                    api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id),
                    timeout=CRI_STOP_TIMEOUT)

        await asyncio.gather(*(remove(sandbox.id) for sandbox in listed.items))


async def cri_ready(endpoint: str, timeout: float) -> None:
    """Wait until a containerd just started answers on its socket and its CRI service is
    up; ContainerdError if it does not within `timeout` seconds."""
    socket = Path(endpoint.removeprefix("unix://"))
    deadline = time.monotonic() + timeout
    while not await socket_answers(socket):
        if time.monotonic() > deadline:
            raise ContainerdError(f"containerd did not open {socket} in {timeout:.0f}s")
        await asyncio.sleep(0.05)
    async with RemoteRuntime(endpoint) as runtime:
        while not await _cri_answers(runtime):
            if time.monotonic() > deadline:
                raise ContainerdError(f"containerd's CRI did not answer in {timeout:.0f}s")
            await asyncio.sleep(0.05)


async def _cri_answers(runtime: RemoteRuntime) -> bool:
    try:
        await runtime.version(api_pb2.VersionRequest(), timeout=1.0)
    except CRIError:
        return False
    return True


async def socket_answers(socket: Path) -> bool:
    """Whether something accepts connections on this unix socket."""
    if not socket.exists():
        return False
    try:
        _, writer = await asyncio.open_unix_connection(str(socket))
    except OSError:
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def free_pod_cidr(seed: int | None = None) -> str:
    """A 10.244.<n>.0/24 that no route on this machine uses, n starting from seed (the pid):
    two test runs, or a test run and a cluster, get different pod networks."""
    routes = subprocess.run(["ip", "-4", "route", "show"], capture_output=True, text=True,
                            check=True).stdout
    used = [ipaddress.ip_network(line.split()[0], strict=False) for line in routes.splitlines()
            if line[:1].isdigit()]
    start = os.getpid() if seed is None else seed
    subnets = list(POD_NETWORKS.subnets(new_prefix=24))
    for offset in range(len(subnets)):
        candidate = subnets[(start + offset) % len(subnets)]
        if not any(candidate.overlaps(network) for network in used):
            return str(candidate)
    raise RuntimeError(f"every /24 of {POD_NETWORKS} is routed already")


def runtime_missing() -> str | None:
    """Why this machine cannot run a containerd node, or None if it can."""
    if os.geteuid() != 0:
        return "a containerd node needs root"
    if not os.path.ismount("/sys/fs/cgroup"):
        return ("no cgroup file system at /sys/fs/cgroup, which runc needs: "
                "mount -t cgroup2 none /sys/fs/cgroup")
    missing = [name for name in REQUIRED_COMMANDS if shutil.which(name) is None]
    return f"not installed: {', '.join(missing)} (run `make apt`)" if missing else None


# -- teardown --------------------------------------------------------------------------------

async def cleanup_stale(base_dir: Path, netns: Path | None = None) -> None:
    """Remove what a crashed run left of a node's runtime in base_dir: its containerd and
    shims, containers, mounts, bridge, CNI rules and cache entries, and its files (the
    bridge and rules in the node's network namespace `netns`, if it has one).

    The names of the bridge and CNI network are read from the CNI config in base_dir.
    """
    base_dir = Path(base_dir).absolute()
    if not base_dir.exists():
        return
    network_name = bridge_name = None
    for conflist in sorted((base_dir / CNI_DIR / "net.d").glob("*.conflist")):
        with contextlib.suppress(OSError, ValueError, KeyError, IndexError):
            network = json.loads(conflist.read_text())
            network_name, bridge_name = network["name"], network["plugins"][0]["bridge"]
    await _remove_node_runtime(base_dir, network_name, bridge_name, netns)


async def _remove_node_runtime(base_dir: Path, network_name: str | None,
                               bridge_name: str | None, netns: Path | None = None,
                               keep: tuple[str, ...] = ()) -> None:
    """Every teardown step in order. Each is a no-op when there is nothing to remove, and
    one that fails does not keep the others from running; the failures are raised last.
    The files named in `keep` stay (their mounts go all the same).

    The bridge and CNI's rules are in the node's network namespace when it has one (and
    went with it if it is gone)."""
    in_node: tuple[str, ...] = ()
    if netns is not None:
        if netns.exists():
            in_node = ("nsenter", f"--net={netns}")
        else:
            bridge_name = None
    state_dir = base_dir / STATE_DIR
    sandbox_ids = _sandbox_ids(state_dir)
    failures: list[str] = []

    @contextlib.contextmanager
    def step(what: str) -> Iterator[None]:
        try:
            yield
        except (ContainerdError, OSError) as error:
            failures.append(f"{what}: {error}")

    with step("stopping containerd"):
        await _kill_and_wait(_processes_with_argument(base_dir / CONFIG_FILE))
    with step("deleting containers"):
        await _delete_runc_containers(state_dir / "runc")
    with step("stopping shims"):
        await _kill_and_wait(_processes_with_argument(base_dir / SOCKET_FILE))
        _remove_shim_sockets(state_dir)
    with step("unmounting"):
        for directory in (base_dir / ROOT_DIR, state_dir):
            unmount_all_under(directory)
    if network_name is not None:
        if bridge_name is not None or netns is None:
            with step("removing CNI iptables rules"):
                await remove_cni_iptables_rules(network_name, in_node)
        with step("removing CNI cache entries"):
            _remove_cni_cache(network_name, sandbox_ids)
    if bridge_name is not None:
        with step("deleting the bridge"):
            await _run(*in_node, "ip", "link", "delete", bridge_name, check=False)
    with step("removing files"):
        for path in (base_dir / name for name in OWNED_PATHS if name not in keep):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            base_dir.rmdir()  # only if the kubelet keeps nothing of its own there
    if failures:
        raise ContainerdError(f"tearing down the runtime in {base_dir}: " + "; ".join(failures))


def _sandbox_ids(state_dir: Path) -> list[str]:
    sandboxes = state_dir / "io.containerd.grpc.v1.cri" / "sandboxes"
    return [path.name for path in sandboxes.iterdir()] if sandboxes.is_dir() else []


def _processes_with_argument(argument: Path) -> list[int]:
    """The pids of processes with this exact command-line argument (our config, socket)."""
    wanted = str(argument).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if wanted in (entry / "cmdline").read_bytes().split(b"\0"):
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    """Whether pid runs (a zombie waiting to be reaped does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


async def _kill_and_wait(pids: list[int], timeout: float = 5.0) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


async def _delete_runc_containers(runc_root: Path) -> None:
    """`runc delete --force` every container runc still knows: kills it, drops its cgroup."""
    if not runc_root.is_dir():
        return
    for namespace in runc_root.iterdir():
        for container in namespace.iterdir():
            await _run("runc", "--root", str(namespace), "delete", "--force", container.name,
                       check=False)


def _remove_shim_sockets(state_dir: Path) -> None:
    """Shims listen outside base_dir (/run/containerd/s/<hash>); each task's `address`
    file says where."""
    for address in state_dir.glob("io.containerd.runtime.v2.task/*/*/address"):
        with contextlib.suppress(OSError):
            Path(address.read_text().strip().removeprefix("unix://")).unlink(missing_ok=True)


def _mount_points() -> list[Path]:
    """This mount namespace's mount points, from /proc/self/mountinfo."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        escaped = line.split()[4]  # space, tab, newline and backslash appear as \ooo
        points.append(Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), escaped)))
    return points


def unmount_all_under(directory: Path) -> None:
    """Unmount everything mounted below directory (rootfs overlays, /dev/shm of pods,
    network namespaces), deepest first; a lazy unmount, so a busy mount goes too."""
    directory = Path(directory).resolve()
    for _ in range(10):  # mounts can be stacked on one point: repeat until none is left
        mounted = [point for point in _mount_points() if point.is_relative_to(directory)
                   and point != directory]
        if not mounted:
            return
        for point in sorted(set(mounted), key=lambda p: len(p.parts), reverse=True):
            if _libc.umount2(bytes(point), MNT_DETACH) != 0:
                error = ctypes.get_errno()
                if error not in (errno.EINVAL, errno.ENOENT):
                    raise ContainerdError(f"cannot unmount {point}: {os.strerror(error)}")
    raise ContainerdError(f"mounts under {directory} keep coming back")


async def remove_cni_iptables_rules(network_name: str, in_node: tuple[str, ...] = ()) -> None:
    """Delete the nat rules the bridge (ipMasq) and portmap plugins added for this network,
    and their per-attachment chains, in one iptables-restore transaction (`in_node`: the
    nsenter command that enters the node's network namespace, if it has one)."""
    saved = await _run(*in_node, "iptables-save", "-t", "nat")
    marker = f'name: \\"{network_name}\\"'  # as iptables-save quotes the rule comment
    deletions: list[str] = []
    chains: set[str] = set()
    for rule in saved.splitlines():
        if not rule.startswith("-A ") or marker not in rule:
            continue
        deletions.append("-D" + rule[2:])
        words = rule.split()
        jump = words[words.index("-j") + 1] if "-j" in words else ""
        chains.update(name for name in (words[1], jump) if CNI_CONTAINER_CHAIN.fullmatch(name))
    if not deletions:
        return
    script = ["*nat", *deletions, *(f"-F {chain}" for chain in sorted(chains)),
              *(f"-X {chain}" for chain in sorted(chains)), "COMMIT", ""]
    await _run(*in_node, "iptables-restore", "--wait", "--noflush", input="\n".join(script))


def _remove_cni_cache(network_name: str, sandbox_ids: list[str]) -> None:
    """libcni's cached results: <network>-<sandbox id>-<ifname> and the loopback's."""
    if not CNI_CACHE_DIR.is_dir():
        return
    ours = re.compile(re.escape(network_name) + r"-[0-9a-f]{64}-\w+")
    for entry in CNI_CACHE_DIR.iterdir():
        if ours.fullmatch(entry.name) or any(entry.name == f"cni-loopback-{sandbox}-lo"
                                             for sandbox in sandbox_ids):
            entry.unlink(missing_ok=True)


async def _run(*command: str, input: str | None = None, check: bool = True) -> str:
    """Run a command; return its stdout, or raise ContainerdError with its stderr."""
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE if input is not None else None,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate(input.encode() if input is not None else None)
    if check and process.returncode != 0:
        raise ContainerdError(f"{' '.join(command)} failed: {err.decode().strip()}")
    return out.decode()


# -- images ----------------------------------------------------------------------------------

async def load_image(target: NodeRuntimeConfig | Path, archive: Path) -> list[str]:
    """Import an image archive (OCI layout or `docker save` tar) into a node's containerd,
    where CRI finds it (namespace k8s.io), unpacked for CRI's snapshotter.

    target is the node's config or its containerd socket. Returns the imported names.
    """
    socket = target.socket if isinstance(target, NodeRuntimeConfig) else Path(target)
    command = ["ctr", "--address", str(socket), "--connect-timeout", "5s",
               "--namespace", CRI_NAMESPACE, "images", "import"]
    config_path = socket.parent / "config.toml"
    if config_path.is_file():
        command += ["--snapshotter", configured_snapshotter(config_path)]
    process = await asyncio.create_subprocess_exec(
        *command, str(archive), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    if process.returncode != 0:
        reason = err.decode().strip().removeprefix("ctr: ") or f"exit code {process.returncode}"
        raise ImageLoadError(f"cannot load {archive} into the containerd at {socket}: {reason}")
    return re.findall(r"^unpacking (\S+) \(", out.decode(), flags=re.MULTILINE)
