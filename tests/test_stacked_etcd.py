"""`up --ha`'s stacked etcd without a cluster: three real etcd members started with the
flags the manifests give them and the certificates ensure_member_pki issues, on three
loopback addresses instead of three nodes. They form one cluster over TLS peer URLs, a
client of the etcd CA writes through any of them, and two keep a quorum when one is
killed."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from minikube_py.apiserver.storage.etcd import EtcdClient, EtcdError, EtcdTLS
from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.cluster.cli import DEFAULT_PORTS, LOAD_BALANCER_RANGE
from minikube_py.cluster.kubeadm.controlplane import (
    ETCD_DATA,
    ETCD_PKI,
    ControlPlane,
    EtcdMember,
    etcd_flags,
)
from minikube_py.cluster.kubeadm.ha import CONTROL_PLANES, ensure_member_pki
from minikube_py.process import LOOPBACK, free_port

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("etcd") is None, reason="etcd is not installed")]

ADDRESSES = ("127.0.0.2", "127.0.0.3", "127.0.0.4")


def member_command(plane: ControlPlane, pki: Path, data: Path) -> list[str]:
    """The manifest's etcd command with the node's folders for kubeadm's paths, less
    what three members on one machine's loopback cannot share (127.0.0.1's ports)."""
    flags = [flag.replace(ETCD_PKI, str(pki)).replace(ETCD_DATA, str(data))
             for flag in etcd_flags(plane) if not flag.startswith("--listen-metrics-urls")]
    own = plane.etcd_advertise_client_url
    return ["etcd", *(f"--listen-client-urls={own}"
                      if flag.startswith("--listen-client-urls=") else flag
                      for flag in flags)]


async def test_three_members_form_one_cluster_over_tls_and_keep_a_quorum_of_two(
        fast_tmp: Path) -> None:
    home = fast_tmp / f"stacked-{free_port()}"
    certs = ClusterCertificates(home)
    certs.ensure(f"https://{LOOPBACK}:6443", (), {})
    ports = {**DEFAULT_PORTS, "etcd-client": free_port(), "etcd-peer": free_port()}
    members = tuple(EtcdMember(name, address)
                    for name, address in zip(CONTROL_PLANES, ADDRESSES, strict=True))
    children: list[subprocess.Popen[bytes]] = []
    try:
        for member in members:
            plane = ControlPlane(advertise_address=member.address, ports=ports, images={},
                                 tracing_endpoint="http://127.0.0.1:4318",
                                 load_balancer_range=LOAD_BALANCER_RANGE,
                                 etcd_members=members)
            pki = ensure_member_pki(certs, member.name, member.address)
            with (home / f"{member.name}.log").open("ab") as log:
                children.append(subprocess.Popen(
                    member_command(plane, pki, home / member.name), stdout=log, stderr=log,
                    start_new_session=True))
        endpoints = [f"https://{address}:{ports['etcd-client']}" for address in ADDRESSES]
        tls = EtcdTLS(str(certs.etcd_pki / "ca.crt"),
                      str(certs.file("apiserver-etcd-client.crt")),
                      str(certs.file("apiserver-etcd-client.key")))
        async with EtcdClient(endpoints, tls=tls) as etcd:
            async with asyncio.timeout(60):
                while True:
                    try:
                        await etcd.put(b"/registry/stacked", b"one")
                        break
                    except EtcdError:
                        await asyncio.sleep(0.3)
        listed = subprocess.run(
            ["etcdctl", f"--endpoints={endpoints[2]}", f"--cacert={tls.ca_file}",
             f"--cert={tls.cert_file}", f"--key={tls.key_file}", "member", "list", "-w",
             "json"], capture_output=True, text=True, check=True, timeout=30,
            env={**os.environ, "ETCDCTL_API": "3"})
        names = {member["name"]: member["peerURLs"]
                 for member in json.loads(listed.stdout)["members"]}
        assert names == {member.name: [f"https://{member.address}:{ports['etcd-peer']}"]
                         for member in members}
        children[0].send_signal(signal.SIGKILL)
        children[0].wait(timeout=10)
        async with EtcdClient(endpoints[1:], tls=tls) as etcd:
            async with asyncio.timeout(30):
                while True:
                    try:
                        await etcd.put(b"/registry/stacked", b"two")
                        break
                    except EtcdError:
                        await asyncio.sleep(0.3)
            found = await etcd.get(b"/registry/stacked")
            assert found is not None and found.value == b"two"
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=10)
