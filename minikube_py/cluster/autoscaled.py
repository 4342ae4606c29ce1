"""The nodes the cluster autoscaler added to the cluster (`up --autoscale-nodes MIN:MAX`),
recorded in <home>/autoscaled.json: the autoscaler, restarted, finds its nodes there, and
`down` stops and removes them with the rest of the cluster.

    {"autoscaled-1": {"group": "autoscaled", "index": 1, "podCIDR": "10.244.9.0/24"}}

Each is a node as `up` makes node-N (netns.py: a network namespace <prefix>autoscaled-1
at .101 of the node network, its veth <prefix>a1; node.py: its containerd and kubelet
under nodes/autoscaled-1/), joined with the bootstrap token as a worker is.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from minikube_py.cluster.netns import ClusterNetwork, NodeNetwork
from minikube_py.cluster.runtime_setup import unmount_all_under

AUTOSCALED = "autoscaled.json"
AUTOSCALED_GROUP = "autoscaled"
"""The node group `up --autoscale-nodes` gives the autoscaler: autoscaled-1, -2, ..."""
MAX_AUTOSCALED = 50
"""Its largest size: the node network has room for .101 to .150."""


def read_autoscaled(state: Path) -> dict[str, dict[str, Any]]:
    """The recorded nodes, by name (none when the file is missing)."""
    try:
        return json.loads((state / AUTOSCALED).read_text())
    except FileNotFoundError:
        return {}


def write_autoscaled(state: Path, nodes: dict[str, dict[str, Any]]) -> None:
    """Record the nodes (replacing the file at once: `down` may read it any time)."""
    path = state / AUTOSCALED
    written = path.with_suffix(".tmp")
    written.write_text(json.dumps(nodes, indent=2))
    os.replace(written, path)


def autoscaled_networks(state: Path, network: ClusterNetwork) -> list[NodeNetwork]:
    """Each recorded node's place in the network."""
    return [network.autoscaled_node(node["group"], node["index"], node["podCIDR"])
            for node in read_autoscaled(state).values()]


def remove_node_files(state: Path, name: str) -> None:
    """The node's files on this machine: its containerd and kubelet (mounts first), its
    pid files, its logs and its kubeconfigs (the token's, the one its kubelet earned)."""
    unmount_all_under(state / "nodes" / name)
    for folder in ("nodes", "run", "logs"):
        shutil.rmtree(state / folder / name, ignore_errors=True)
    for kubeconfig in (f"{name}.conf", f"{name}-bootstrap.conf"):
        (state / "kubeconfigs" / kubeconfig).unlink(missing_ok=True)
