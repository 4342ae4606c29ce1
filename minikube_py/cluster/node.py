"""The cluster's nodes for `minikube-py up`: a containerd and a kubelet each.

    <home>/nodes/node-N/          containerd's config, root, state and socket; CNI config
    <home>/nodes/node-N/kubelet/  the kubelet's pod volumes and container logs
    <home>/images/*.tar           the shipped images (pause, busybox, echo), loaded at start

Each node lives in its own network namespace (netns.py), with its pods on a Linux bridge
there and a /24 of 10.244.0.0/16 that the host routes to it, so pod IPs answer from the
host and from every other node.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from minikube_py.cluster.runtime_setup import NodeRuntimeConfig, load_image, unmount_all_under
from minikube_py.images.catalog import build_catalog


def node_config(state: Path, node: str, pod_cidr: str, registry: str = "",
                netns: Path | None = None) -> NodeRuntimeConfig:
    """A node's runtime layout under the cluster's state; pulls go to `registry`."""
    return NodeRuntimeConfig(node_name=node, base_dir=state / "nodes" / node,
                             pod_cidr=pod_cidr, registry=registry, netns=netns)


async def load_shipped_images(config: NodeRuntimeConfig, state: Path) -> None:
    """Load the busybox-based images into the node's containerd, so they need no pull."""
    for archive in build_catalog(state / "images"):
        await load_image(config, archive.path)


def remove_kubelet_volumes(config: NodeRuntimeConfig) -> None:
    """After the node's pods are gone: unmount their volumes (tmpfs for secrets and memory
    emptyDirs) and delete them."""
    kubelet_dir = config.base_dir / "kubelet"
    unmount_all_under(kubelet_dir)
    shutil.rmtree(kubelet_dir / "pods", ignore_errors=True)
