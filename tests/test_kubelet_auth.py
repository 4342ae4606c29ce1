"""The kubelet's API over TLS, asking the API server who calls and what they may do
(TokenReview, SubjectAccessReview), and the API server reaching it with its kubelet
client certificate, as kubeadm sets both up."""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from minikube_py.client.rest import Client
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.kubelet.auth import KubeletAuth, KubeletAuthConfig
from minikube_py.kubelet.server import KubeletServer
from minikube_py.security import pki
from tests.test_pod_logs import FakeHost
from tests.test_security import SecuredServer, admin_cert, kubectl, start_server, stop

NODE = "secure-node"


@pytest.fixture(scope="module")
async def kubelet_etcd(fast_tmp: Path) -> AsyncIterator[EtcdProcess]:
    async with EtcdProcess(fast_tmp / f"etcd-kubelet-{uuid.uuid4().hex[:8]}") as process:
        yield process


@pytest.fixture(scope="module")
def ca() -> pki.KeyPair:
    return pki.new_ca()


@pytest.fixture(scope="module")
def server(kubelet_etcd: EtcdProcess, ca: pki.KeyPair, fast_tmp: Path
           ) -> Iterator[SecuredServer]:
    directory = fast_tmp / "kubelet-auth"
    directory.mkdir(parents=True, exist_ok=True)
    pki.issue(ca, "kube-apiserver-kubelet-client", organizations=("system:masters",),
              client=True).write(directory, "kubelet-client")
    started = start_server(
        kubelet_etcd.client_url, directory, ca, "--authorization-mode=Node,RBAC",
        "--disable-admission-plugins=ServiceAccount",
        f"--kubelet-client-certificate={directory / 'kubelet-client.crt'}",
        f"--kubelet-client-key={directory / 'kubelet-client.key'}",
        f"--kubelet-certificate-authority={directory / 'ca.crt'}")
    yield started
    stop(started)


@pytest.fixture(scope="module")
def admin(server: SecuredServer, ca: pki.KeyPair) -> Path:
    return server.kubeconfig("admin", cert=admin_cert(ca))


@pytest.fixture
async def kubelet(server: SecuredServer, ca: pki.KeyPair, admin: Path, tmp_path: Path
                  ) -> AsyncIterator[KubeletServer]:
    """The kubelet's API for node secure-node: HTTPS with a serving certificate for
    127.0.0.1, client certificates from the cluster CA, bearer tokens and
    authorization by the API server, as the node's own user; its Node points at it."""
    serving = pki.issue(ca, NODE, ip_addresses=("127.0.0.1",), server=True)
    cert, key = serving.write(tmp_path, "kubelet")
    node_user = server.kubeconfig("node", cert=pki.issue(
        ca, f"system:node:{NODE}", organizations=("system:nodes",), client=True))
    client = Client.from_kubeconfig(node_user, user_agent="kubelet")
    auth = KubeletAuth(KubeletAuthConfig(anonymous=False, token_webhook=True,
                                         authorization_mode="Webhook"), client, NODE)
    kubelet = KubeletServer(FakeHost(tmp_path / "logs"), "127.0.0.1", 0, auth=auth,
                            ssl_context=pki.server_ssl_context(cert, key, server.directory /
                                                               "ca.crt"))
    await kubelet.start()
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}
    kubectl(node_user, "create", "-f", "-", stdin=json.dumps(node))
    status = {"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                         "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}}}}
    patched = kubectl(admin, "patch", "node", NODE, "--subresource=status", "--type=merge",
                      "-p", json.dumps(status))
    assert patched.returncode == 0, patched.stderr
    yield kubelet
    await kubelet.stop()
    await client.close()


def get(kubelet: KubeletServer, path: str, *, cert: pki.KeyPair | None = None,
        token: str = "", ca: pki.KeyPair) -> tuple[int, str]:
    context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    if cert is not None:
        directory = Path(f"/dev/shm/kubelet-auth-{uuid.uuid4().hex[:8]}")
        directory.mkdir()
        try:
            context.load_cert_chain(*cert.write(directory, "client"))
        finally:
            for file in directory.iterdir():
                file.unlink()
            directory.rmdir()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"https://127.0.0.1:{kubelet.port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


async def call(kubelet: KubeletServer, path: str, **options: Any) -> tuple[int, str]:
    """`get` in a thread: the kubelet answers from this test's event loop."""
    return await asyncio.to_thread(get, kubelet, path, **options)


async def test_without_credentials_the_kubelet_answers_401(kubelet: KubeletServer,
                                                          ca: pki.KeyPair) -> None:
    assert await call(kubelet, "/pods", ca=ca) == (401, "Unauthorized")
    assert await call(kubelet, "/healthz", ca=ca) == (200, "ok")


async def test_a_user_needs_nodes_subresources_in_rbac(
        kubelet: KubeletServer, ca: pki.KeyPair, admin: Path) -> None:
    alice = pki.issue(ca, "alice", client=True)
    assert await call(kubelet, "/pods", cert=alice, ca=ca) == (
        403, "Forbidden (user=alice, verb=get, resource=nodes, subresource=proxy)")
    rule = json.dumps({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": "stats-reader"},
                       "rules": [{"apiGroups": [""], "resources": ["nodes/stats"],
                                  "verbs": ["get"]}]})
    assert kubectl(admin, "create", "-f", "-", stdin=rule).returncode == 0
    bound = kubectl(admin, "create", "clusterrolebinding", "bob-stats",
                    "--clusterrole=stats-reader", "--user=bob")
    assert bound.returncode == 0, bound.stderr
    bob = pki.issue(ca, "bob", client=True)
    code, body = await call(kubelet, "/stats/summary", cert=bob, ca=ca)
    assert code == 200 and json.loads(body)["node"]["nodeName"] == "fake"
    assert (await call(kubelet, "/metrics", cert=bob, ca=ca))[0] == 403
    assert (await call(kubelet, "/pods", cert=bob, ca=ca))[0] == 403


async def test_a_service_account_token_is_reviewed_by_the_api_server(
        kubelet: KubeletServer, ca: pki.KeyPair, admin: Path, server: SecuredServer) -> None:
    assert await call(kubelet, "/pods", token="not-a-token", ca=ca) == (401, "Unauthorized")
    token = "bob-s3cret-token"  # start_server's token file: bob in groups dev, qa
    code, body = await call(kubelet, "/pods", token=token, ca=ca)
    assert (code, body) == (
        403, "Forbidden (user=bob, verb=get, resource=nodes, subresource=proxy)")


async def test_the_api_server_reaches_the_kubelet_with_its_client_certificate(
        kubelet: KubeletServer, admin: Path) -> None:
    """nodes/proxy: the API server calls https://127.0.0.1:<port>/pods as
    kube-apiserver-kubelet-client (system:masters), which the kubelet lets in."""
    listed = await asyncio.to_thread(kubectl, admin, "get", "--raw",
                                     f"/api/v1/nodes/{NODE}/proxy/pods")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["kind"] == "PodList"

