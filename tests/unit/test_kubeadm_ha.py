"""`up --ha`'s pieces without a cluster: the stacked etcd members' flags and certificates,
the API servers' etcd endpoints, haproxy's configuration, the nodes and processes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography import x509

from minikube_py.cluster import cli
from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.cluster.cli import DEFAULT_PORTS, LOAD_BALANCER_RANGE
from minikube_py.cluster.haproxy import HAProxyProcess, haproxy_config
from minikube_py.cluster.kubeadm.controlplane import (
    ControlPlane,
    EtcdMember,
    apiserver_flags,
    etcd_flags,
)
from minikube_py.cluster.kubeadm.ha import CONTROL_PLANES, ensure_member_pki
from minikube_py.cluster.netns import ClusterNetwork

MEMBERS = (EtcdMember("control-plane", "172.18.0.10"),
           EtcdMember("control-plane2", "172.18.0.9"),
           EtcdMember("control-plane3", "172.18.0.8"))
INITIAL_CLUSTER = ("--initial-cluster=control-plane=https://172.18.0.10:2380,"
                   "control-plane2=https://172.18.0.9:2380,"
                   "control-plane3=https://172.18.0.8:2380")


def plane(address: str, members: tuple[EtcdMember, ...] = MEMBERS) -> ControlPlane:
    return ControlPlane(advertise_address=address, ports=DEFAULT_PORTS, images={},
                        tracing_endpoint="http://172.18.0.1:4318",
                        load_balancer_range=LOAD_BALANCER_RANGE, etcd_members=members)


def test_each_member_serves_its_peers_at_its_node_address_and_clients_on_loopback_too() -> None:
    flags = etcd_flags(plane("172.18.0.9"))
    assert "--name=control-plane2" in flags
    assert "--listen-client-urls=https://127.0.0.1:2379,https://172.18.0.9:2379" in flags
    assert "--advertise-client-urls=https://172.18.0.9:2379" in flags
    assert "--listen-peer-urls=https://172.18.0.9:2380" in flags
    assert "--initial-advertise-peer-urls=https://172.18.0.9:2380" in flags
    assert INITIAL_CLUSTER in flags
    assert "--peer-client-cert-auth=true" in flags


def test_one_member_without_ha_stays_on_loopback() -> None:
    flags = etcd_flags(plane("172.18.0.10", ()))
    assert "--listen-client-urls=https://127.0.0.1:2379" in flags
    assert "--initial-cluster=minikube-py=https://127.0.0.1:2380" in flags
    assert "--etcd-servers=https://127.0.0.1:2379" in apiserver_flags(plane("172.18.0.10", ()))


def test_an_api_server_asks_its_own_member_first_then_the_others() -> None:
    assert ("--etcd-servers=https://127.0.0.1:2379,https://172.18.0.10:2379,"
            "https://172.18.0.8:2379") in apiserver_flags(plane("172.18.0.9"))


def test_member_certificates_name_the_node_and_share_the_etcd_ca(tmp_path: Path) -> None:
    certs = ClusterCertificates(tmp_path)
    certs.ensure("https://172.18.0.1:6443", ("172.18.0.10",), {})
    folder = ensure_member_pki(certs, "control-plane3", "172.18.0.8")
    assert (folder / "ca.crt").read_bytes() == (certs.etcd_pki / "ca.crt").read_bytes()
    for name in ("server", "peer"):
        cert = x509.load_pem_x509_certificate((folder / f"{name}.crt").read_bytes())
        assert cert.subject.rfc4514_string() == "CN=control-plane3"
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} == {
            "172.18.0.8", "127.0.0.1"}
        assert set(names.get_values_for_type(x509.DNSName)) == {"control-plane3", "localhost"}
    other = ensure_member_pki(certs, "control-plane2", "172.18.0.9")
    assert (other / "server.crt").read_bytes() != (folder / "server.crt").read_bytes()


def test_haproxy_checks_readyz_over_tls_on_every_api_server(tmp_path: Path) -> None:
    text = haproxy_config("172.18.0.1", 6443, [("control-plane", "172.18.0.10", 6443),
                                               ("control-plane2", "172.18.0.9", 6443)])
    assert "bind 172.18.0.1:6443" in text
    assert "http-check send meth GET uri /readyz" in text
    assert "server control-plane2 172.18.0.9:6443 check check-ssl verify none" in text
    if shutil.which("haproxy") is None:
        pytest.skip("haproxy is not installed (make apt)")
    (tmp_path / "haproxy.cfg").write_text(text)
    checked = subprocess.run(["haproxy", "-c", "-f", str(tmp_path / "haproxy.cfg")],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_ha_cluster_has_three_control_plane_nodes_and_haproxy_in_front(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "runtime_missing", lambda: None)
    cluster = {"secure": True, "layout": "kubeadm", "ha": True, "nodes": 1,
               "ports": dict(DEFAULT_PORTS), "network": {"prefix": "mk-",
                                                         "nodeNetwork": "172.18.0.0/24"},
               "podCIDRs": {name: f"10.244.{index}.0/24"
                            for index, name in enumerate((*CONTROL_PLANES, "node-1"))}}
    nodes = cli.node_networks(cluster)
    assert [(node.name, node.address, node.host_veth) for node in nodes] == [
        ("control-plane", "172.18.0.10", "mk-v0"), ("control-plane2", "172.18.0.9", "mk-c2"),
        ("control-plane3", "172.18.0.8", "mk-c3"), ("node-1", "172.18.0.11", "mk-v1")]
    assert cli.apiserver_url(cluster) == "https://172.18.0.1:6443"
    ClusterCertificates(tmp_path).ensure(cli.apiserver_url(cluster), (), {})
    processes = cli.components(tmp_path, cluster)
    haproxy = processes["haproxy"]
    assert isinstance(haproxy, HAProxyProcess)
    assert haproxy.endpoint == "172.18.0.1:6443"
    assert [name for name, _, _ in haproxy.servers] == list(CONTROL_PLANES)
    for name in CONTROL_PLANES:
        command = processes[f"{name}/kubelet"].command()
        assert f"--pod-manifest-path={tmp_path}/nodes/{name}/manifests" in command
    assert not any("--pod-manifest-path" in flag
                   for flag in processes["node-1/kubelet"].command())
    assert ClusterNetwork().control_plane("", "control-plane3", 3).namespace == (
        "mk-control-plane3")
