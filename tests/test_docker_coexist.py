"""minikube-py next to Docker: `up --nodes 2` while dockerd runs and the FORWARD policy is
DROP (as dockerd sets it when it turns forwarding on), pods reaching each other across the
nodes through the host, and `down` taking our FORWARD rules with it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docker_engine import docker_engine, engine_answers
from tests.test_cluster_cli import ECHO_POD, kubectl, launcher, leftovers, network_prefix

pytestmark = pytest.mark.slow


def forward_chain() -> list[str]:
    return subprocess.run(["iptables", "-w", "-S", "FORWARD"], capture_output=True, text=True,
                          check=True).stdout.splitlines()


@pytest.fixture
def docker_dropping_forwarded(fast_tmp: Path) -> Iterator[None]:
    """dockerd running, and the FORWARD policy DROP until the test ends (put back then)."""
    with docker_engine(fast_tmp / "dockerd.log"):
        assert engine_answers()
        policy = next(line for line in forward_chain() if line.startswith("-P FORWARD"))
        subprocess.run(["iptables", "-w", "-P", "FORWARD", "DROP"], check=True)
        try:
            yield
        finally:
            subprocess.run(["iptables", "-w", *policy.split()], check=True)


def test_pods_reach_each_other_across_nodes_while_docker_drops_forwarded_traffic(
        fast_tmp: Path, docker_dropping_forwarded: None) -> None:
    home = fast_tmp / "docker-coexist-home"
    ours = f"minikube-py {network_prefix()}br0"  # the rules of the other lane's bridge stay
    try:
        launcher(home, "up", "--nodes", "2")
        assert "-P FORWARD DROP" in forward_chain()
        assert any(ours in rule for rule in forward_chain())
        pods = fast_tmp / "docker-coexist-pods.yaml"
        pods.write_text("---\n".join(ECHO_POD.format(node=node) for node in ("node-1", "node-2")))
        kubectl(home, "apply", "-f", str(pods))
        addresses = {}
        for node in ("node-1", "node-2"):
            kubectl(home, "wait", "--for=condition=Ready", f"pod/web-{node}", "--timeout=120s")
            addresses[node] = kubectl(home, "get", "pod", f"web-{node}", "-o",
                                      "jsonpath={.status.podIP}").stdout
        # from a pod on each node to the pod on the other: forwarded by the host
        for node, other in (("node-1", "node-2"), ("node-2", "node-1")):
            kubectl(home, "run", f"client-{node}", "--image=busybox:1.36", "--restart=Never",
                    f"--overrides={{\"spec\": {{\"nodeName\": \"{node}\"}}}}", "--",
                    "wget", "-qO-", f"http://{addresses[other]}:8080/")
        for node, other in (("node-1", "node-2"), ("node-2", "node-1")):
            kubectl(home, "wait", "--for=jsonpath={.status.phase}=Succeeded",
                    f"pod/client-{node}", "--timeout=120s")
            assert f"web-{other}" in kubectl(home, "logs", f"client-{node}").stdout
    finally:
        launcher(home, "down", "--purge", check=False)
    assert leftovers(home) == []
    assert not [rule for rule in forward_chain() if ours in rule]
