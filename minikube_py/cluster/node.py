"""The cluster's node for `minikube-py up`: a containerd and a kubelet on this machine.

    <home>/nodes/node-1/          containerd's config, root, state and socket; CNI config
    <home>/nodes/node-1/kubelet/  the kubelet's pod volumes and container logs
    <home>/images/*.tar           the shipped images (pause, busybox, echo), loaded at start

The node lives in this machine's own network namespace, with its pods on a Linux bridge
and a /24 of 10.244.0.0/16 that no route uses yet, so pod IPs answer from the host.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from minikube_py.cluster.etcd import LOOPBACK
from minikube_py.images.catalog import build_catalog
from minikube_py.kubelet.runtime_setup import (
    NodeRuntimeConfig,
    cleanup_stale,
    cri_ready,
    load_image,
    remove_pod_sandboxes,
    socket_answers,
    unmount_all_under,
    write_cni_config,
    write_containerd_config,
)

NODE_NAME = "node-1"
Start = Callable[[str, list[str]], None]


def node_config(state: Path, pod_cidr: str, registry: str = "") -> NodeRuntimeConfig:
    return NodeRuntimeConfig(node_name=NODE_NAME, base_dir=state / "nodes" / NODE_NAME,
                             pod_cidr=pod_cidr, registry=registry)


def start_containerd(state: Path, pod_cidr: str, registry: str, start: Start
                     ) -> NodeRuntimeConfig:
    """Clear what a crashed run left, write the configs (pulls from `registry`), start
    containerd, load the busybox-based images (so they need no pull)."""
    config = node_config(state, pod_cidr, registry)
    asyncio.run(cleanup_stale(config.base_dir))
    config.base_dir.mkdir(parents=True, exist_ok=True)
    write_containerd_config(config)
    write_cni_config(config)
    start("containerd", ["containerd", "--config", str(config.config_path)])
    archives = build_catalog(state / "images")

    async def ready_and_loaded() -> None:
        await cri_ready(config.endpoint, timeout=30)
        for archive in archives:
            await load_image(config, archive.path)
    asyncio.run(ready_and_loaded())
    return config


def kubelet_command(config: NodeRuntimeConfig, kubeconfig: Path, port: int,
                    cluster_dns: str) -> list[str]:
    return [sys.executable, "-m", "minikube_py.kubelet", f"--kubeconfig={kubeconfig}",
            f"--cluster-dns={cluster_dns}",
            f"--node-name={config.node_name}",
            f"--container-runtime-endpoint={config.endpoint}",
            f"--root-dir={config.base_dir / 'kubelet'}", f"--pod-cidr={config.pod_cidr}",
            f"--node-ip={LOOPBACK}", f"--address={LOOPBACK}", f"--port={port}"]


def stop_node_runtime(state: Path, pod_cidr: str) -> None:
    """After the kubelet stopped: remove every pod (so CNI releases their addresses and
    rules), stop containerd and its shims, unmount, delete the bridge and the files."""
    config = node_config(state, pod_cidr)

    async def drain_and_remove() -> None:
        if await socket_answers(config.socket):
            await remove_pod_sandboxes(config.endpoint)
        await cleanup_stale(config.base_dir)
    asyncio.run(drain_and_remove())
    # the pods' volumes (tmpfs for secrets and memory emptyDirs): their pods are gone
    kubelet_dir = config.base_dir / "kubelet"
    unmount_all_under(kubelet_dir)
    shutil.rmtree(kubelet_dir / "pods", ignore_errors=True)
