"""`minikube-py up` refuses bad flags with one line, before it changes anything."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from minikube_py.cluster import cli
from minikube_py.cluster.cli import main, parse_extra_config


@pytest.mark.parametrize(("argv", "message"), [
    (["up", "--nodes", "0"], "--nodes must be between 1 and 50, not 0"),
    (["up", "--simulated-nodes", "-2"], "--simulated-nodes must be 0 or more, not -2"),
    (["up", "--extra-config", "node-monitor-grace-period=10s"],
     "--extra-config wants COMPONENT.FLAG=VALUE"),
    (["up", "--extra-config", "controller-manager.node-monitor-grace-period"],
     "--extra-config wants COMPONENT.FLAG=VALUE"),
    (["up", "--extra-config", "etcd.quota-backend-bytes=1"],
     "--extra-config: no component 'etcd'; one of: apiserver, controller-manager"),
])
def test_a_bad_flag_is_one_line_and_nothing_is_written(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("MINIKUBE_PY_HOME", str(home))
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: {message}") and error.count("\n") == 1, error
    assert not home.exists()


def test_extra_config_groups_flags_by_component_and_a_later_one_wins() -> None:
    assert parse_extra_config([
        "controller-manager.node-monitor-grace-period=10s", "kubelet.max-pods=20",
        "controller-manager.node-monitor-grace-period=8s", "apiserver.v=3",
    ]) == {"controller-manager": {"node-monitor-grace-period": "8s"},
           "kubelet": {"max-pods": "20"}, "apiserver": {"v": "3"}}


@pytest.mark.parametrize(("environment", "message"), [
    ({"MINIKUBE_PY_NETWORK_PREFIX": "mk_"},
     "MINIKUBE_PY_NETWORK_PREFIX must be lower-case letters and digits ending in one '-'"),
    ({"MINIKUBE_PY_NETWORK_PREFIX": "abcdefghijkl-"},
     "MINIKUBE_PY_NETWORK_PREFIX: prefix 'abcdefghijkl-' is too long for interface names"),
    ({"MINIKUBE_PY_NODE_NETWORK": "10.242.0.1/24"},
     "MINIKUBE_PY_NODE_NETWORK must be an IPv4 network such as 10.242.0.0/24, not "
     "'10.242.0.1/24'"),
    ({"MINIKUBE_PY_NODE_NETWORK": "10.242.0.0/25"},
     "MINIKUBE_PY_NODE_NETWORK 10.242.0.0/25 is too small"),
    ({"MINIKUBE_PY_NETWORK_PREFIX": "mkb-", "MINIKUBE_PY_NODE_NETWORK": "172.18.0.0/16"},
     "the node network 172.18.0.0/16 overlaps 172.18.0.0/24, the network of the cluster in"),
])
def test_a_bad_node_network_is_one_line_and_nothing_is_written(
    environment: dict[str, str], message: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """The node network of a new home, from the environment: a bad prefix or range, or
    one that overlaps a running cluster's (here one whose component is this process)."""
    running = tmp_path / "running"
    (running / "run").mkdir(parents=True)
    (running / "run" / "apiserver.pid").write_text(f"{os.getpid()}\n")
    (running / "cluster.json").write_text(json.dumps(
        {"network": {"prefix": "mk-", "nodeNetwork": "172.18.0.0/24"}}))
    owners = tmp_path / "owners"
    owners.mkdir()
    (owners / "mk-owner").write_text(f"{running}\n")
    monkeypatch.setattr(cli, "NETWORK_OWNERS", owners)
    monkeypatch.setattr(cli, "runtime_missing", lambda: None)
    home = tmp_path / "home"
    monkeypatch.setenv("MINIKUBE_PY_HOME", str(home))
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        main(["up"])
    assert exited.value.code == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: {message}") and error.count("\n") == 1, error
    assert not home.exists()


def test_another_node_network_starts_its_pod_cidrs_in_the_upper_half() -> None:
    """Two clusters that come up together do not search for pod CIDRs from one place."""
    assert cli.first_pod_cidr_seed({"network": {"prefix": "mk-"}}) == 1
    assert cli.first_pod_cidr_seed({}) == 1
    assert 128 <= cli.first_pod_cidr_seed({"network": {"prefix": "mkb-"}}) < 248


def test_a_new_cluster_is_laid_out_the_kubeadm_way_where_it_can_be(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """kubeadm's layout by default; the control plane as processes without TLS (kubelets
    join with bootstrap tokens) or where no node can run."""
    monkeypatch.setattr(cli, "runtime_missing", lambda: None)
    assert cli.default_layout(None) == "kubeadm"
    assert cli.default_layout(True) == "kubeadm"
    assert cli.default_layout(False) == "processes"
    monkeypatch.setattr(cli, "runtime_missing", lambda: "containerd is not installed")
    assert cli.default_layout(None) == "processes"
