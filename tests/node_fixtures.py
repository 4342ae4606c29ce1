"""Pytest plugin: a real containerd node for the session, with the shipped images imported.

`containerd_node` starts one containerd (CRI on runc, a CNI bridge on its own pod CIDR)
under the session's scratch dir and tears it down completely at the end. A crashed run
cannot do that, so the next test run first removes what such a run left of its node.
`KubeletNode` is a kubelet on such a node; `node_pulling_from` starts a node of its own that
pulls from a registry, with a kubelet on it.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.cluster.runtime_setup import (
    CNI_DIR,
    CONFIG_FILE,
    Containerd,
    NodeRuntimeConfig,
    cleanup_stale,
    free_pod_cidr,
    load_image,
    runtime_missing,
)
from minikube_py.cri import RemoteRuntime
from minikube_py.images.catalog import PAUSE, build_catalog, build_image
from minikube_py.kubelet.kubelet import Kubelet, KubeletConfig
from minikube_py.kubelet.node_status import read_host_info
from minikube_py.process import free_port
from tests.conftest import SCRATCH_PREFIX, TMPFS

NODE_DIR = "containerd-node"
"""The node's base dir inside the session's scratch dir (fast_tmp)."""

@dataclass(frozen=True)
class ContainerdNode:
    """The session's node: its runtime config, CRI endpoint, and the image archives."""

    config: NodeRuntimeConfig
    images_dir: Path

    @property
    def endpoint(self) -> str:
        return self.config.endpoint

    @property
    def pod_cidr(self) -> str:
        return self.config.pod_cidr

    @property
    def base_dir(self) -> Path:
        return self.config.base_dir


def _node_dirs_of_dead_runs() -> list[Path]:
    """The containerd node dirs (a config.toml beside a cni folder: the session's node,
    and the nodes of node_pulling_from) in scratch dirs whose test run (named by its pid)
    is gone."""
    found = []
    for root in {TMPFS, Path(tempfile.gettempdir())}:
        for scratch in root.glob(f"{SCRATCH_PREFIX}*"):
            pid = scratch.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                found += [config.parent for config in scratch.glob(f"*/{CONFIG_FILE}")
                          if (config.parent / CNI_DIR).is_dir()]
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before fast_tmp removes a crashed run's scratch dir: remove its nodes' pods, shims,
    mounts, bridges and iptables rules, which deleting files alone cannot."""
    if runtime_missing() is None:
        for node_dir in _node_dirs_of_dead_runs():
            asyncio.run(cleanup_stale(node_dir))


@pytest.fixture(scope="session")
async def containerd_node(fast_tmp: Path) -> AsyncIterator[ContainerdNode]:
    """One containerd node for the session, with pause, busybox and echo imported."""
    reason = runtime_missing()
    if reason is not None:
        pytest.skip(reason)
    images_dir = fast_tmp / "images"
    archives = await asyncio.to_thread(build_catalog, images_dir)
    config = NodeRuntimeConfig(node_name=f"test-{os.getpid()}", base_dir=fast_tmp / NODE_DIR,
                               pod_cidr=free_pod_cidr())
    async with Containerd(config):
        for archive in archives:
            await load_image(config, archive.path)
        yield ContainerdNode(config=config, images_dir=images_dir)


class KubeletNode:
    """A kubelet on a test node, restartable (a restart keeps containers running)."""

    def __init__(self, config: KubeletConfig, kubeconfig: Path, endpoint: str) -> None:
        self.config = config
        self.name = config.node_name
        self.kubeconfig = kubeconfig
        self.endpoint = endpoint
        self.kubelet: Kubelet | None = None

    async def start(self) -> None:
        self.client = Client.from_kubeconfig(self.kubeconfig, user_agent="kubelet")
        self.runtime = RemoteRuntime(self.endpoint)
        host = read_host_info(self.config.root_dir, node_ip="127.0.0.1", hostname=self.name)
        self.kubelet = Kubelet(self.config, self.client, self.runtime, host)
        async with asyncio.timeout(60):
            await self.kubelet.start()

    async def stop(self) -> None:
        if self.kubelet is not None:
            await self.kubelet.stop()
        await self.runtime.close()
        await self.client.close()

    async def restart(self) -> None:
        await self.stop()
        await self.start()


async def delete_node(kubeconfig: Path, name: str) -> None:
    """Delete the Node a test's kubelet registered and the CSINode it owns (what the
    garbage collector would do; these API servers run without it), as the admin (gone
    already is fine)."""
    async with Client.from_kubeconfig(kubeconfig) as client:
        for resource in (client.resource("nodes"),
                         client.resource("csinodes", "storage.k8s.io")):
            with suppress(NotFound):
                await resource.delete(name)


@asynccontextmanager
async def node_pulling_from(registry: str, name: str, base_dir: Path, kubelet_dir: Path,
                            kubeconfig: Path) -> AsyncIterator[KubeletNode]:
    """A containerd whose only registry is `registry`, and a kubelet on it; its Node object
    is deleted after."""
    runtime = NodeRuntimeConfig(node_name=name, base_dir=base_dir, pod_cidr=free_pod_cidr(),
                                registry=registry)
    async with Containerd(runtime):
        root = kubelet_dir / name
        root.mkdir(parents=True)
        config = KubeletConfig(node_name=name, root_dir=root, logs_root=root / "logs",
                               pod_cidr=runtime.pod_cidr, address="127.0.0.1", port=free_port(),
                               eviction_hard="memory.available<1Mi", backoff_initial=1.0,
                               backoff_max=8.0, sync_frequency=10.0)
        await load_image(runtime, build_image(PAUSE, base_dir.with_name(
            f"{base_dir.name}-images")).path)
        node = KubeletNode(config, kubeconfig, runtime.endpoint)
        await node.start()
        try:
            yield node
        finally:
            await node.stop()
            await delete_node(kubeconfig, name)
