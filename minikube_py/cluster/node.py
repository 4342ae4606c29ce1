"""The cluster's nodes for `minikube-py up`: a containerd and a kubelet each.

    <home>/nodes/node-N/          containerd's config, root, state and socket; CNI config
    <home>/nodes/node-N/kubelet/  the kubelet's pod volumes and container logs
    <home>/images/pause-3.9.tar   the pod sandbox image, loaded at start: a node's static
                                  pods start before anything could be pulled. Every other
                                  image (busybox, echo, nginx, the component images) the
                                  node pulls from the cluster's registry when a pod needs
                                  it, as a real node does

Each node lives in its own network namespace (netns.py), with its pods on a Linux bridge
there and a /24 of 10.244.0.0/16 that the host routes to it, so pod IPs answer from the
host and from every other node.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from minikube_py.cluster.runtime_setup import NodeRuntimeConfig, load_image, unmount_all_under
from minikube_py.images.catalog import PAUSE, build_image


def node_config(state: Path, node: str, pod_cidr: str, registry: str = "",
                netns: Path | None = None) -> NodeRuntimeConfig:
    """A node's runtime layout under the cluster's state; pulls go to `registry`."""
    return NodeRuntimeConfig(node_name=node, base_dir=state / "nodes" / node,
                             pod_cidr=pod_cidr, registry=registry, netns=netns)


async def load_sandbox_image(config: NodeRuntimeConfig, state: Path) -> None:
    """Load the pause image into the node's containerd: its pods' sandboxes need no pull."""
    await load_image(config, build_image(PAUSE, state / "images").path)


def remove_kubelet_volumes(config: NodeRuntimeConfig) -> None:
    """After the node's pods are gone: unmount their volumes (tmpfs for secrets and memory
    emptyDirs) and delete them."""
    kubelet_dir = config.base_dir / "kubelet"
    unmount_all_under(kubelet_dir)
    shutil.rmtree(kubelet_dir / "pods", ignore_errors=True)
