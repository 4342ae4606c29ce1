"""`minikube-py ssh NODE [-- COMMAND]` in an up cluster (the lane's shared one,
tests/e2e/conftest.py, its pod in namespace ssh): the command runs in the node's
network namespace, crictl there talks to that node's containerd without flags (and exec
reaches containerd's streaming server, which listens on the node's loopback), exit codes
pass through, and an unknown node is one line naming the nodes there are.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import LaneCluster
from tests.test_cluster_cli import kubectl

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
POD = """
apiVersion: v1
kind: Pod
metadata: {name: sleeper}
spec:
  containers:
  - name: nap
    image: localhost/busybox:1.36
    command: ["sleep", "3600"]
"""


def ssh(home: Path, tools: Path, *args: str, stdin: str | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikube_py.cluster", "ssh", *args], capture_output=True,
        text=True, timeout=120, input=stdin,
        env={**os.environ, "MINIKUBE_PY_HOME": str(home),
             "PATH": f"{os.environ.get('PATH', '')}{os.pathsep}{tools}"})


def crictl_tool(directory: Path) -> Path:
    """Where a `crictl` is found when this virtualenv has no console script yet (it gets
    one when the project is installed again): the same main, run by this Python. ssh puts
    the virtualenv's bin first on PATH, so the installed script wins when there is one."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "crictl"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m minikube_py.crictl "$@"\n')
    script.chmod(0o755)
    return directory


def test_ssh_runs_commands_in_the_node_with_crictl_pointed_at_its_containerd(
        lane_cluster: LaneCluster, fast_tmp: Path) -> None:
    tools = crictl_tool(fast_tmp / "ssh-tools")
    # kubectl works in the namespace (view); ssh reads the cluster's own home
    with lane_cluster.namespaces(__name__, "ssh") as view:
        home = lane_cluster.home
        subprocess.run([KUBECTL, f"--kubeconfig={view / 'kubeconfig'}", "apply", "-f", "-"],
                       input=POD, capture_output=True, text=True, check=True, timeout=60)
        kubectl(view, "wait", "--for=condition=Ready", "pod/sleeper", "--timeout=90s")
        node = kubectl(view, "get", "pod", "sleeper", "-o", "jsonpath={.spec.nodeName}").stdout
        address = kubectl(view, "get", "node", node, "-o",
                          'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}'
                          ).stdout
        container_id = kubectl(view, "get", "pod", "sleeper", "-o",
                               "jsonpath={.status.containerStatuses[0].containerID}"
                               ).stdout.removeprefix("containerd://")

        listed = ssh(home, tools, node, "--", "crictl", "ps")
        assert listed.returncode == 0, listed.stderr
        assert listed.stderr == ""  # the node's crictl.yaml names the endpoint: no warning
        header, *rows = listed.stdout.splitlines()
        assert header.split()[:2] == ["CONTAINER", "IMAGE"]
        assert any(row.split()[0] == container_id[:13] and "nap" in row.split()
                   and "sleeper" in row.split() for row in rows), listed.stdout

        execed = ssh(home, tools, node, "--", "crictl", "exec", container_id[:13],
                     "sh", "-c", "echo from-the-pod; exit 5")
        assert (execed.returncode, execed.stdout) == (5, "from-the-pod\n"), execed.stderr

        addresses = ssh(home, tools, node, "--", "ip", "-4", "addr")
        assert addresses.returncode == 0 and f"inet {address}/" in addresses.stdout
        host = subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True).stdout
        assert f"inet {address}/" not in host  # the node's address is the node's alone

        assert ssh(home, tools, node, "--", "sh", "-c", "exit 7").returncode == 7
        path = ssh(home, tools, node, "--", "sh", "-c", 'echo "$PATH"').stdout
        assert path.split(os.pathsep)[0] == str(Path(sys.executable).parent)

        shell = ssh(home, tools, node, stdin="ip -4 addr\nexit 3\n")
        assert shell.returncode == 3 and f"inet {address}/" in shell.stdout

        unknown = ssh(home, tools, "node-9", "--", "true")
        assert unknown.returncode == 1 and unknown.stdout == ""
        nodes = ", ".join(sorted(kubectl(home, "get", "nodes", "-o", "name").stdout.replace(
            "node/", "").split()))  # control-plane, node-1, node-2 in the kubeadm layout
        assert unknown.stderr.splitlines() == [f"error: no node named 'node-9'; nodes: {nodes}"]
