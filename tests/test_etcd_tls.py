"""etcd over TLS, as `up` runs it: etcd serves https and lets in only clients with a
certificate of its own CA; the API server reaches it with --etcd-cafile, --etcd-certfile
and --etcd-keyfile."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minikube_py.apiserver.storage.etcd import EtcdClient, EtcdError, EtcdTLS
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.security import pki


@pytest.fixture(scope="module")
def certs(fast_tmp: Path) -> ClusterCertificates:
    made = ClusterCertificates(fast_tmp / "etcd-tls-state")
    made.ensure("https://127.0.0.1:6443", (), {})
    return made


@pytest.fixture(scope="module")
async def secure_etcd(certs: ClusterCertificates, fast_tmp: Path) -> AsyncIterator[EtcdProcess]:
    async with EtcdProcess(fast_tmp / "etcd-tls-data", tls=certs.etcd_tls()) as process:
        yield process


async def test_etcd_serves_tls_to_clients_of_its_ca_only(
        secure_etcd: EtcdProcess, certs: ClusterCertificates, fast_tmp: Path) -> None:
    assert secure_etcd.client_url.startswith("https://127.0.0.1:")
    async with secure_etcd.client() as client:
        await client.create(b"/tls-test", b"ok")
        found = await client.get(b"/tls-test")
        assert found is not None and found.value == b"ok"
    # a certificate of another CA is refused
    stranger = pki.issue(pki.new_ca(), "stranger", client=True)
    cert, key = stranger.write(fast_tmp, "etcd-stranger")
    tls = EtcdTLS(str(certs.etcd_pki / "ca.crt"), str(cert), str(key))
    async with EtcdClient([secure_etcd.client_url], request_timeout=2, tls=tls) as client:
        with pytest.raises(EtcdError):
            await client.get(b"/tls-test")
    # and plain HTTP gets nowhere
    async with EtcdClient([secure_etcd.client_url.replace("https", "http")],
                          request_timeout=2) as client:
        with pytest.raises(EtcdError):
            await client.get(b"/tls-test")


async def test_the_api_server_reaches_etcd_with_its_client_certificate(
        secure_etcd: EtcdProcess, certs: ClusterCertificates, fast_tmp: Path) -> None:
    async with APIServerProcess([secure_etcd.client_url], fast_tmp / "etcd-tls-apiserver.log",
                                extra_args=(*certs.apiserver_etcd_flags(),
                                            "--disable-admission-plugins=ServiceAccount")
                                ) as server:
        with urllib.request.urlopen(f"{server.url}/api/v1/namespaces/default",
                                    timeout=10) as answer:
            assert answer.status == 200


def test_https_etcd_servers_without_certificates_are_one_line(fast_tmp: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "minikube_py.apiserver", "--etcd-servers=https://127.0.0.1:1"],
        capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].endswith(
        "https --etcd-servers need --etcd-cafile, --etcd-certfile and --etcd-keyfile (and "
        "http ones none of them)")
