"""`minikube-py up --autoscale-nodes MIN:MAX` without a cluster: the flag's bounds, the one
line a bad value gives (before anything is made), the cluster autoscaler's process and
flags (--extra-config cluster-autoscaler.FLAG=VALUE), and the nodes it added as `down`,
`ssh` and `logs` find them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minikube_py.autoscaler.__main__ import parse_args
from minikube_py.cluster import cli
from minikube_py.cluster.autoscaled import write_autoscaled
from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.cluster.cli import DEFAULT_PORTS
from minikube_py.cluster.components import ClusterAutoscalerProcess, KubeletProcess
from minikube_py.cluster.netns import DEFAULT_NODE_NETWORK, DEFAULT_PREFIX, ClusterNetwork


@pytest.mark.parametrize(("text", "bounds"), [("0:2", (0, 2)), ("1:1", (1, 1)),
                                              ("3:50", (3, 50))])
def test_autoscale_nodes_takes_min_and_max(text: str, bounds: tuple[int, int]) -> None:
    assert cli.parse_autoscale_nodes(text) == bounds


@pytest.mark.parametrize("text", ["3:1", "x", "1", "-1:2", "0:0", "1:x", "0:51", ":2"])
def test_a_bad_autoscale_nodes_is_one_line_and_nothing_starts(
        text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("MINIKUBE_PY_HOME", str(home))
    with pytest.raises(SystemExit) as exited:
        cli.main(["up", f"--autoscale-nodes={text}"])
    assert exited.value.code == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line == (f"error: --autoscale-nodes wants MIN:MAX with 0 <= MIN <= MAX and "
                    f"1 <= MAX <= 50 (the autoscaler's nodes besides node-1 ... node-N), "
                    f"e.g. 0:2, not {text!r}")
    assert not home.exists()


def test_the_autoscaler_takes_extra_config_flags() -> None:
    assert cli.parse_extra_config(["cluster-autoscaler.scale-down-unneeded-time=20s"]) == {
        "cluster-autoscaler": {"scale-down-unneeded-time": "20s"}}


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setattr(cli, "runtime_missing", lambda: None)
    ClusterCertificates(tmp_path).ensure("https://172.18.0.10:6443", (), {})
    return {"secure": True, "layout": "kubeadm", "ports": dict(DEFAULT_PORTS),
            "verbosity": 2, "autoscaleNodes": [0, 2],
            "extraConfig": {"cluster-autoscaler": {"scale-down-unneeded-time": "20s"}},
            "network": {"prefix": DEFAULT_PREFIX, "nodeNetwork": DEFAULT_NODE_NETWORK},
            "podCIDRs": {"control-plane": "10.244.1.0/24", "node-1": "10.244.2.0/24"},
            "nodes": 1}


def test_the_autoscaler_runs_on_the_host_with_its_flags(tmp_path: Path,
                                                        cluster: dict) -> None:
    process = cli.components(tmp_path, cluster)["cluster-autoscaler"]
    assert isinstance(process, ClusterAutoscalerProcess)
    command = process.command()
    assert command[1:3] == ["-m", "minikube_py.autoscaler"]
    assert {"--nodes=0:2:autoscaled", "--cloud-provider=minikube-py",
            f"--cloud-config={tmp_path / 'cluster.json'}", "--port=8085",
            "--scale-down-unneeded-time=20s"} <= set(command)
    # its own user, cluster-autoscaler (cluster/roles.py), not the admin
    assert f"--kubeconfig={tmp_path / 'kubeconfigs' / 'cluster-autoscaler.conf'}" in command
    args = parse_args(command[3:])
    assert (args.nodes, args.cloud_provider, args.scale_down_unneeded_time) == (
        (0, 2, "autoscaled"), "minikube-py", 20.0)


def test_the_nodes_it_added_are_the_clusters_for_down_not_for_up(tmp_path: Path,
                                                                  cluster: dict) -> None:
    write_autoscaled(tmp_path, {"autoscaled-1": {"group": "autoscaled", "index": 1,
                                                 "podCIDR": "10.244.70.0/24"}})
    assert "autoscaled-1/kubelet" not in cli.components(tmp_path, cluster)
    processes = cli.components(tmp_path, cluster, autoscaled=True)
    kubelet = processes["autoscaled-1/kubelet"]
    assert isinstance(kubelet, KubeletProcess)
    assert kubelet.node_ip == "172.18.0.101"
    assert kubelet.bootstrap_kubeconfig is not None  # it joins with the token
    assert "--node-labels=autoscaler.minikube-py.io/node-group=autoscaled" in (
        kubelet.command())
    node = ClusterNetwork().autoscaled_node("autoscaled", 1, "10.244.70.0/24")
    assert (node.namespace, node.host_veth) == ("mk-autoscaled-1", "mk-a1")


@pytest.fixture
def home(tmp_path: Path, cluster: dict, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cluster's home as `up` left it, on a network no cluster runs on, with one node
    the autoscaler added."""
    network = {"prefix": "mkunit-", "nodeNetwork": DEFAULT_NODE_NETWORK}
    (tmp_path / "cluster.json").write_text(json.dumps({**cluster, "network": network}))
    write_autoscaled(tmp_path, {"autoscaled-1": {"group": "autoscaled", "index": 1,
                                                 "podCIDR": "10.244.70.0/24"}})
    monkeypatch.setenv("MINIKUBE_PY_HOME", str(tmp_path))
    return tmp_path


def test_ssh_finds_the_nodes_the_autoscaler_added(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:  # found: only its namespace is missing
        cli.main(["ssh", "autoscaled-1", "--", "true"])
    assert str(exited.value) == (
        "error: autoscaled-1's network namespace /var/run/netns/mkunit-autoscaled-1 does "
        "not exist: is the cluster up? (`minikube-py up`)")
    with pytest.raises(SystemExit) as exited:
        cli.main(["ssh", "autoscaled-2"])
    assert str(exited.value) == ("error: no node named 'autoscaled-2'; nodes: "
                                 "control-plane, node-1, autoscaled-1")


def test_logs_finds_the_nodes_the_autoscaler_added(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = home / "logs" / "autoscaled-1" / "kubelet.log"
    log.parent.mkdir(parents=True)
    log.write_text("I1130 kubelet started\n")
    cli.main(["logs", "kubelet", "--node", "autoscaled-1"])
    assert capsys.readouterr().out == "I1130 kubelet started\n"
    with pytest.raises(SystemExit):
        cli.main(["logs", "kubelet"])
    assert capsys.readouterr().err.splitlines() == [
        "error: kubelet runs on every node: say which with --node "
        "(control-plane, node-1, autoscaled-1)"]
