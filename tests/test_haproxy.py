"""haproxy in front of several API servers (`up --ha`'s control-plane endpoint), without
a cluster: real haproxy, three real API servers over TLS on one etcd, the official
client through haproxy while one server is killed with -9."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from kubernetes import client, config

from benchmarks.failover import ClientLoop
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.cluster.cli import apiserver_tls
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.haproxy import HAProxyProcess
from minikube_py.process import LOOPBACK, free_port

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("haproxy") is None,
                                 reason="haproxy is not installed (make apt)")]


async def test_a_killed_api_server_behind_haproxy_costs_a_client_at_most_one_retry(
        private_etcd: EtcdProcess, fast_tmp: Path) -> None:
    home = fast_tmp / f"haproxy-{free_port()}"
    port = free_port()
    certs = ClusterCertificates(home)
    certs.ensure(f"https://{LOOPBACK}:{port}", (), {})
    servers = [APIServerProcess([private_etcd.client_url], home / f"apiserver-{index}.log",
                                tls=apiserver_tls(certs),
                                extra_args=(f"--client-ca-file={certs.ca_file}",))
               for index in range(3)]
    haproxy = HAProxyProcess(home / "haproxy.cfg", address=LOOPBACK, port=port,
                             servers=[(f"server-{index}", LOOPBACK, server.port)
                                      for index, server in enumerate(servers)],
                             log_path=home / "haproxy.log")
    async with servers[0], servers[1], servers[2], haproxy:
        api = client.CoreV1Api(config.new_client_from_config(str(certs.kubeconfig("admin"))))
        loop = ClientLoop("official client", lambda: api.list_namespace(
            limit=5, _request_timeout=5))
        with loop.running():
            deadline = time.monotonic() + 30
            while loop.sent < 20 and time.monotonic() < deadline:
                time.sleep(0.1)
            await servers[1].kill()
            sent_at_kill = loop.sent
            while loop.sent < sent_at_kill + 30 and time.monotonic() < deadline + 30:
                time.sleep(0.1)
            # its /readyz check (TLS) marks the killed server down, and only that one
            while "server-1 is DOWN" not in (logged := haproxy.log_path.read_text()):
                assert time.monotonic() < deadline + 30, logged
                time.sleep(0.1)
        assert loop.failed == []
        assert loop.sent >= sent_at_kill + 30
        assert "server-0 is DOWN" not in logged and "server-2 is DOWN" not in logged, logged
