"""Kubelet TLS bootstrap, end to end on a real API server (TLS, Node and RBAC
authorization, bootstrap tokens) and etcd, with the csrapproving and csrsigning
controllers: a node that holds only a bootstrap token earns its own client certificate,
renews it as itself, and is refused when its request is denied or of the wrong shape."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from minikube_py.api import Obj
from minikube_py.client.errors import Unauthorized
from minikube_py.client.rest import Client
from minikube_py.cluster.bootstraptoken import (
    generate_token,
    node_bootstrap_rbac,
    token_secret,
    write_bootstrap_kubeconfig,
)
from minikube_py.controllers.base import ControllerOptions
from minikube_py.controllers.certificates.approver import CSRApprovingController
from minikube_py.controllers.certificates.signer import CSRSigningController
from minikube_py.controllers.manager import ControllerManager
from minikube_py.kubelet import certificate
from minikube_py.security import csr as csrs
from minikube_py.security import pki
from tests.api_helpers import eventually
from tests.test_bootstrap_tokens import authenticated
from tests.test_security import SecuredServer, admin_cert, kubectl, server_of_its_own

RBAC = "rbac.authorization.k8s.io"
CSRS = ("certificatesigningrequests", "certificates.k8s.io")


@pytest.fixture(scope="module")
async def server(fast_tmp: Path) -> AsyncIterator[SecuredServer]:
    async with server_of_its_own(fast_tmp / "tls-bootstrap", pki.new_ca(),
                                 "--authorization-mode=Node,RBAC",
                                 "--enable-bootstrap-token-auth",
                                 "--enable-admission-plugins=NodeRestriction",
                                 "--disable-admission-plugins=ServiceAccount") as started:
        yield started


@pytest.fixture(scope="module")
def admin(server: SecuredServer) -> Path:
    return server.kubeconfig("admin", cert=admin_cert(server.ca))


@pytest.fixture(scope="module")
async def admin_client(admin: Path) -> AsyncIterator[Client]:
    async with Client.from_kubeconfig(admin, user_agent="tests") as client:
        for binding in node_bootstrap_rbac():
            await client.resource("clusterrolebindings", RBAC).create(binding)
        # tokens that may ask for node certificates, but whose requests wait for a person
        await client.resource("clusterrolebindings", RBAC).create({
            "apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "manual-node-bootstrap"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole",
                        "name": "system:node-bootstrapper"},
            "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": MANUAL_TOKENS}]})
        yield client


@pytest.fixture(scope="module")
async def controllers(admin: Path, server: SecuredServer,
                      admin_client: Client) -> AsyncIterator[ControllerManager]:
    """csrapproving and csrsigning, signing with the cluster CA for 30 days."""
    client = Client.from_kubeconfig(admin, user_agent="test-controller-manager")
    manager = ControllerManager(
        client, [CSRApprovingController, CSRSigningController],
        options=ControllerOptions(cluster_signing_ca=server.ca,
                                  cluster_signing_duration=30 * 24 * 3600.0))
    await manager.start()
    yield manager
    await manager.stop()
    await client.close()


NODE_TOKENS = "system:bootstrappers:kubeadm:default-node-token"
MANUAL_TOKENS = "system:bootstrappers:manual"


async def bootstrap_token(server: SecuredServer, client: Client, group: str = NODE_TOKENS
                          ) -> str:
    """A token in kubeadm's default node token group, or in another group, once it
    works. The API server checks a token against its watch cache, which learns of the
    new Secret a moment after the create returns: a bootstrap begun before then is
    refused (401), as a kubelet started too early is on a real cluster."""
    token = generate_token()
    await client.resource("secrets").create(token_secret(token, extra_groups=(group,)))
    await authenticated(server, token)
    return token


def bootstrap_kubeconfig(server: SecuredServer, token: str, where: Path) -> Path:
    return write_bootstrap_kubeconfig(where / "bootstrap-kubelet.conf", server.url,
                                      server.ca.cert_pem, token)


def subject(cert: x509.Certificate) -> tuple[str, list[str]]:
    return (str(cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value),
            [str(a.value) for a in cert.subject.get_attributes_for_oid(
                NameOID.ORGANIZATION_NAME)])


async def the_csrs(client: Client) -> list[Obj]:
    return (await client.resource(*CSRS).list())["items"]


async def test_a_node_with_only_a_bootstrap_token_earns_its_own_client_certificate(
        server: SecuredServer, admin: Path, admin_client: Client,
        controllers: ControllerManager, tmp_path: Path) -> None:
    token = await bootstrap_token(server, admin_client)
    kubeconfig, cert_dir = tmp_path / "kubelet.conf", tmp_path / "pki"
    await certificate.bootstrap("node-x", kubeconfig, bootstrap_kubeconfig(
        server, token, tmp_path), cert_dir)

    earned = certificate.kubeconfig_certificate(kubeconfig)
    assert earned is not None and earned.path == cert_dir / "kubelet-client-current.pem"
    assert (cert_dir / "kubelet-client-current.pem").is_symlink()
    assert subject(earned.cert) == ("system:node:node-x", ["system:nodes"])
    earned.cert.verify_directly_issued_by(server.ca.cert)
    who = kubectl(kubeconfig, "auth", "whoami", "-o", "json")
    assert who.returncode == 0, who.stderr
    user = json.loads(who.stdout)["status"]["userInfo"]
    assert user["username"] == "system:node:node-x"
    assert "system:nodes" in user["groups"]
    # the request is on record as the token's, approved by the controller
    requested = [c for c in await the_csrs(admin_client)
                 if c["spec"]["username"] == f"system:bootstrap:{token[:6]}"]
    assert len(requested) == 1
    assert requested[0]["metadata"]["name"].startswith("node-csr-")
    approved = [c for c in requested[0]["status"]["conditions"] if c["type"] == "Approved"]
    assert approved[0]["reason"] == "AutoApproved"
    assert approved[0]["message"] == (
        "Auto approving kubelet client certificate after SubjectAccessReview.")
    table = kubectl(admin, "get", "csr", requested[0]["metadata"]["name"], "--no-headers")
    assert "kubernetes.io/kube-apiserver-client-kubelet" in table.stdout
    assert f"system:bootstrap:{token[:6]}" in table.stdout
    assert "Approved,Issued" in table.stdout

    # a restart finds the certificate good and asks for nothing
    before = len(await the_csrs(admin_client))
    await certificate.bootstrap("node-x", kubeconfig, tmp_path / "missing.conf", cert_dir)
    assert len(await the_csrs(admin_client)) == before


async def test_a_node_renews_its_certificate_as_itself(
        server: SecuredServer, admin_client: Client, controllers: ControllerManager,
        tmp_path: Path) -> None:
    token = await bootstrap_token(server, admin_client)
    kubeconfig, cert_dir = tmp_path / "kubelet.conf", tmp_path / "pki"
    await certificate.bootstrap("node-y", kubeconfig, bootstrap_kubeconfig(
        server, token, tmp_path), cert_dir)
    first = certificate.current(cert_dir)
    assert first is not None
    async with Client.from_kubeconfig(kubeconfig, user_agent="kubelet") as client:
        await client.resource("nodes").list()  # a connection with the first certificate
        reloaded: list[bool] = []
        rotation = certificate.CertificateRotation(
            client, "node-y", cert_dir, lambda: (client.reload_client_certificate(),
                                                  reloaded.append(True)))
        await rotation.rotate()
        assert reloaded == [True]
        second = certificate.current(cert_dir)
        assert second is not None and second.cert.serial_number != first.cert.serial_number
        assert subject(second.cert) == ("system:node:node-y", ["system:nodes"])
        await client.resource("nodes").list()  # the client carries on, on the new one
    renewal = [c for c in await the_csrs(admin_client)
               if c["spec"]["username"] == "system:node:node-y"]
    assert len(renewal) == 1 and renewal[0]["metadata"]["name"].startswith("csr-")
    assert renewal[0]["status"]["conditions"][0]["message"] == (
        "Auto approving self kubelet client certificate after SubjectAccessReview.")


async def test_a_denied_request_ends_the_bootstrap_with_the_reason(
        server: SecuredServer, admin: Path, admin_client: Client,
        controllers: ControllerManager, tmp_path: Path) -> None:
    # a token outside the node token group: the approver may not approve its requests
    token = await bootstrap_token(server, admin_client, MANUAL_TOKENS)
    username = f"system:bootstrap:{token[:6]}"

    async def deny() -> bool:
        if waiting.done():  # the bootstrap ended without a request to deny: say why
            waiting.result()
            raise AssertionError("the bootstrap ended with a certificate, undenied")
        for csr in await the_csrs(admin_client):
            if csr["spec"]["username"] == username:
                denied = kubectl(admin, "certificate", "deny", csr["metadata"]["name"])
                assert denied.returncode == 0, denied.stderr
                return True
        return False

    waiting = asyncio.create_task(certificate.bootstrap(
        "node-z", tmp_path / "kubelet.conf", bootstrap_kubeconfig(server, token, tmp_path),
        tmp_path / "pki"))
    try:
        await eventually(deny, what="the token's request to deny")
        with pytest.raises(certificate.CertificateRequestFailed) as refused:
            async with asyncio.timeout(60):
                await waiting
    finally:
        waiting.cancel()
    assert str(refused.value) == (
        "certificate signing request is denied, reason: KubectlDeny, message: This CSR "
        "was denied by kubectl certificate deny.")
    assert not (tmp_path / "kubelet.conf").exists()
    assert not (tmp_path / "pki" / "kubelet-client-current.pem").exists()


async def test_a_bad_token_is_refused_before_any_request_is_made(
        server: SecuredServer, admin_client: Client, tmp_path: Path) -> None:
    before = len(await the_csrs(admin_client))
    with pytest.raises(Unauthorized):
        await certificate.bootstrap("node-w", tmp_path / "kubelet.conf", bootstrap_kubeconfig(
            server, generate_token(), tmp_path), tmp_path / "pki")
    assert len(await the_csrs(admin_client)) == before


async def test_the_signer_fails_a_request_that_is_not_the_shape_its_signer_promises(
        admin: Path, admin_client: Client, controllers: ControllerManager) -> None:
    _, request = csrs.new_request("system:node:node-v", ("system:masters",))
    name = f"wrong-shape-{uuid.uuid4().hex[:6]}"
    await admin_client.resource(*CSRS).create({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": base64.b64encode(request).decode(),
                 "signerName": csrs.KUBELET_CLIENT,
                 "usages": ["digital signature", "client auth"]}})
    approved = kubectl(admin, "certificate", "approve", name)
    assert approved.returncode == 0, approved.stderr

    async def failed() -> Obj | None:
        csr = await admin_client.resource(*CSRS).get(name)
        return next((c for c in csrs.conditions(csr) if c["type"] == "Failed"), None)

    condition = await eventually(failed, what="the Failed condition")
    assert condition["reason"] == "SignerValidationFailure"
    assert condition["message"] == "subject organization is not system:nodes"
    csr = await admin_client.resource(*CSRS).get(name)
    assert not csrs.certificate_of(csr)
    assert "Approved,Failed" in kubectl(admin, "get", "csr", name).stdout


async def test_a_kubelet_gets_its_serving_certificate_once_the_owner_approves_it(
        server: SecuredServer, admin: Path, admin_client: Client,
        controllers: ControllerManager, tmp_path: Path) -> None:
    """--rotate-server-certificates: the node asks, as itself, for a kubelet-serving
    certificate naming its name and address. csrapproving leaves it (a node may not vouch
    for its own names); `up`'s approval approves what names only the node, csrsigning
    signs, and the pair is written where the kubelet serves from."""
    from minikube_py.cluster.join import approve_serving_certificates

    token = await bootstrap_token(server, admin_client)
    kubeconfig, cert_dir = tmp_path / "kubelet.conf", tmp_path / "pki"
    await certificate.bootstrap("node-s", kubeconfig, bootstrap_kubeconfig(
        server, token, tmp_path), cert_dir)
    async with Client.from_kubeconfig(kubeconfig, user_agent="kubelet") as node:
        asking = asyncio.create_task(certificate.serving_certificate(
            node, "node-s", ("node-s", "10.9.8.7"), cert_dir))
        # a request naming another address is not the node's to have: left pending
        stranger = asyncio.create_task(certificate.request_certificate(
            node, "node-s", serving=("node-s", "10.9.8.99"), timeout=60))
        try:
            pending = await eventually(lambda: _pending_serving(admin_client, 2),
                                       what="both serving requests")
            assert len(pending) == 2
            await approve_serving_certificates(
                admin, {"node-s": ("10.9.8.7", cert_dir / "kubelet-server-current.pem")},
                timeout=60)
            async with asyncio.timeout(60):
                pair = await asking
        finally:
            asking.cancel()
            stranger.cancel()
    served = certificate.read_pair(pair)
    assert served is not None and served.good()
    served.cert.verify_directly_issued_by(server.ca.cert)
    assert subject(served.cert) == ("system:node:node-s", ["system:nodes"])
    names = served.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["node-s"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["10.9.8.7"]
    usages = served.cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert [u.dotted_string for u in usages] == ["1.3.6.1.5.5.7.3.1"]  # server auth
    left = [c for c in await the_csrs(admin_client)
            if c["spec"]["signerName"] == csrs.KUBELET_SERVING
            and not csrs.has_condition(c, "Approved")]
    assert len(left) == 1  # the stranger's, naming an address that is not the node's
    asked = csrs.request_of(left[0]).extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    assert [str(ip) for ip in asked.get_values_for_type(x509.IPAddress)] == ["10.9.8.99"]


async def _pending_serving(client: Client, count: int) -> list[Obj] | None:
    found = [c for c in await the_csrs(client) if c["spec"]["signerName"]
             == csrs.KUBELET_SERVING and not csrs.has_condition(c, "Approved")]
    return found if len(found) >= count else None
