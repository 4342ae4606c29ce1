"""`minikube-py ssh NODE [-- COMMAND]`: a shell, or one command, inside a node, as
`minikube ssh` or `docker exec -it kind-control-plane bash` opens one.

A node here is a network namespace (netns.py), so entering it is `nsenter --net=/var/run/
netns/mk-node-N` (never `ip netns exec`, which remounts /sys: see docs/decisions.md). Inside,
the node's tools work without flags, as on a kubeadm node:

    CRI_CONFIG_FILE              <home>/nodes/node-N/crictl.yaml, naming the node's
    CONTAINER_RUNTIME_ENDPOINT   containerd socket (a kind node has /etc/crictl.yaml)
    PATH                         the virtualenv's bin first: crictl, kubectl, mkctl

The command replaces this process, so its exit code (and a terminal) pass straight through.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from minikube_py.cluster.netns import NodeNetwork
from minikube_py.cluster.runtime_setup import SOCKET_FILE

CRICTL_CONFIG = "crictl.yaml"


def add_ssh_command(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                    home: Callable[[], Path], nodes: Callable[[], list[NodeNetwork]]) -> None:
    """Add `ssh NODE [-- COMMAND]` to the minikube-py command line."""
    ssh = commands.add_parser("ssh", help="a shell in a node (its network namespace, its "
                                          "containerd for crictl), or run one command there")
    ssh.add_argument("node", metavar="NODE",
                     help="the node, e.g. node-1, or autoscaled-1 the cluster autoscaler added")
    ssh.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                     help="run this instead of a shell; its exit code is ours")
    ssh.set_defaults(run=partial(ssh_command, home=home, nodes=nodes))


def ssh_command(args: argparse.Namespace, home: Callable[[], Path],
                nodes: Callable[[], list[NodeNetwork]]) -> None:
    """Find the node, write its crictl.yaml, and exec the command in its namespace."""
    known = nodes()
    node = next((n for n in known if n.name == args.node), None)
    if node is None:
        names = ", ".join(n.name for n in known)
        raise SystemExit(f"error: no node named {args.node!r}; nodes: {names}" if names else
                         f"error: no node named {args.node!r}: the cluster has no nodes "
                         "(`minikube-py up` first)")
    if not node.path.exists():
        raise SystemExit(f"error: {node.name}'s network namespace {node.path} does not exist: "
                         "is the cluster up? (`minikube-py up`)")
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        command = [os.environ.get("SHELL") or shutil.which("bash") or "/bin/sh"]
    endpoint = f"unix://{home() / 'nodes' / node.name / SOCKET_FILE}"
    config = write_crictl_config(home() / "nodes" / node.name, endpoint)
    environment = node_environment(os.environ, node.name, endpoint, config)
    nsenter = shutil.which("nsenter")
    if nsenter is None:
        raise SystemExit("error: nsenter is not installed (Debian: apt-get install util-linux)")
    os.execve(nsenter, ["nsenter", f"--net={node.path}", "--", *command], environment)


def write_crictl_config(node_dir: Path, endpoint: str) -> Path:
    """The node's crictl.yaml (what a kind node keeps in /etc/crictl.yaml)."""
    path = node_dir / CRICTL_CONFIG
    text = f"runtime-endpoint: {endpoint}\nimage-endpoint: {endpoint}\n"
    if not path.exists() or path.read_text() != text:
        node_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def node_environment(current: os._Environ[str] | dict[str, str], node: str, endpoint: str,
                     config: Path) -> dict[str, str]:
    """The environment inside the node: ours, pointed at the node's containerd, with the
    virtualenv's tools first on PATH."""
    tools = str(Path(sys.executable).parent)
    path = [tools, *(p for p in current.get("PATH", os.defpath).split(os.pathsep)
                     if p and p != tools)]
    return {**current, "PATH": os.pathsep.join(path), "CRI_CONFIG_FILE": str(config),
            "CONTAINER_RUNTIME_ENDPOINT": endpoint, "MINIKUBE_PY_NODE": node}
