"""Bootstrap tokens on a real API server (TLS, RBAC, --enable-bootstrap-token-auth) and
etcd: who a token authenticates as and when it does not, the tokencleaner and
bootstrapsigner controllers running as their own ServiceAccounts under their namespaced
roles, and kubeadm's discovery of the cluster with a token and a CA hash, as `kubeadm
join` does before TLS bootstrap."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api import bootstraptoken as bt
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.bootstraptoken import (
    DiscoveryError,
    ca_cert_hash,
    cluster_info_configmap,
    cluster_info_rbac,
    discover,
    generate_token,
    kube_proxy_config_map,
    token_secret,
    write_bootstrap_kubeconfig,
)
from minikube_py.cluster.kubeadm.addons import Addons, kube_proxy_objects
from minikube_py.controllers.bootstrapsigner import BootstrapSigner
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.tokencleaner import TokenCleaner
from minikube_py.security import pki
from tests.api_helpers import eventually
from tests.test_security import SecuredServer, admin_cert, kubectl, server_of_its_own

RBAC = "rbac.authorization.k8s.io"


@pytest.fixture(scope="module")
async def server(fast_tmp: Path) -> AsyncIterator[SecuredServer]:
    """Bootstrap token authentication on; a ServiceAccount key, so the controllers can
    run as their own accounts."""
    directory = fast_tmp / "bootstrap-tokens"
    directory.mkdir(parents=True, exist_ok=True)
    ca = pki.new_ca()
    pki.issue(ca, "service-accounts", client=True).write(directory, "sa")
    async with server_of_its_own(
            directory, ca, "--enable-bootstrap-token-auth",
            f"--service-account-signing-key-file={directory / 'sa.key'}") as started:
        yield started


@pytest.fixture(scope="module")
def admin(server: SecuredServer) -> Path:
    return server.kubeconfig("admin", cert=admin_cert(server.ca))


@pytest.fixture(scope="module")
async def admin_client(admin: Path) -> AsyncIterator[Client]:
    async with Client.from_kubeconfig(admin, user_agent="tests") as client:
        yield client


@pytest.fixture(scope="module")
async def controllers(admin: Path) -> AsyncIterator[ControllerManager]:
    """The tokencleaner and bootstrapsigner, each writing as its ServiceAccount."""
    async with Client.from_kubeconfig(admin, user_agent="test-controller-manager") as client:
        manager = ControllerManager(client, [BootstrapSigner, TokenCleaner],
                                    use_service_account_credentials=True)
        async with asyncio.timeout(30):
            await manager.start()
        yield manager
        await manager.stop()


@pytest.fixture(scope="module")
async def cluster_info(server: SecuredServer, admin_client: Client) -> Obj:
    """What kubeadm init publishes: cluster-info, readable by anonymous users."""
    for obj in cluster_info_rbac():
        await admin_client.resource(obj["kind"].lower() + "s", RBAC).create(obj)
    return await admin_client.resource("configmaps").create(
        cluster_info_configmap(server.url, server.ca.cert_pem))


async def create_token(client: Client, **options: Any) -> str:
    token = generate_token()
    await client.resource("secrets").create(token_secret(token, **options))
    return token


def status_with(server: SecuredServer, token: str) -> int:
    """The status of GET /api with `Authorization: Bearer <token>`."""
    request = urllib.request.Request(f"{server.url}/api",
                                     headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10,
                                    context=server.client_context(None)) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return error.code


def whoami(kubeconfig: Path) -> Obj | None:
    result = kubectl(kubeconfig, "auth", "whoami", "-o", "json")
    return json.loads(result.stdout)["status"]["userInfo"] if result.returncode == 0 else None


async def authenticated(server: SecuredServer, token: str) -> None:
    """Until the token works: its Secret reached the API server's watch cache."""
    async def works() -> bool:
        return status_with(server, token) == 200

    await eventually(works, what="the token to authenticate")


# -- authentication -------------------------------------------------------------------------

async def test_a_valid_token_authenticates_as_system_bootstrap_id_in_the_bootstrappers(
        server: SecuredServer, admin_client: Client) -> None:
    token = await create_token(admin_client, description="for a node")
    await authenticated(server, token)
    user = whoami(server.kubeconfig("token", token=token))
    token_id = token.split(".")[0]
    assert user == {"username": f"system:bootstrap:{token_id}", "groups": [
        "system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token",
        "system:authenticated"]}


async def test_a_token_whose_secret_does_not_check_out_is_401(
        server: SecuredServer, admin_client: Client) -> None:
    secrets = admin_client.resource("secrets")
    refused = []
    wrong_secret = await create_token(admin_client)
    refused.append(wrong_secret[:7] + "x" * 16)
    refused.append(await create_token(admin_client, now=datetime.now(UTC) - timedelta(days=2)))
    refused.append(await create_token(admin_client, usages=("signing",)))
    wrong_type = generate_token()
    opaque = token_secret(wrong_type)
    opaque["type"] = "Opaque"
    await secrets.create(opaque)
    refused.append(wrong_type)
    bad_group = generate_token()
    with_bad_group = token_secret(bad_group)
    with_bad_group["data"]["auth-extra-groups"] = base64.b64encode(b"system:masters").decode()
    await secrets.create(with_bad_group)
    refused.append(bad_group)
    deleting = generate_token()
    held = token_secret(deleting)
    held["metadata"]["finalizers"] = ["tests.minikube-py/hold"]
    await secrets.create(held)
    await secrets.delete(held["metadata"]["name"], "kube-system")
    refused.append(deleting)
    refused.append(generate_token())  # no Secret at all
    # a good token created last: once it works, the watch cache holds all the others
    await authenticated(server, await create_token(admin_client))
    assert {token: status_with(server, token) for token in refused} == {
        token: 401 for token in refused}
    assert whoami(server.kubeconfig("refused", token=refused[0])) is None
    fetched = await secrets.get(held["metadata"]["name"], "kube-system")
    await secrets.update({**fetched, "metadata": {**fetched["metadata"], "finalizers": []}})


async def test_without_the_flag_a_valid_token_is_401(
        apiserver: APIServerProcess, api_client: Client) -> None:
    token = generate_token()
    created = await api_client.resource("secrets").create(token_secret(token))
    try:
        request = urllib.request.Request(f"{apiserver.url}/api",
                                         headers={"Authorization": f"Bearer {token}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=60)
        assert refused.value.code == 401
    finally:
        await api_client.resource("secrets").delete(created["metadata"]["name"],
                                                    "kube-system")


# -- the controllers ------------------------------------------------------------------------

async def test_the_token_cleaner_deletes_token_secrets_once_they_expire(
        admin_client: Client, controllers: ControllerManager,
        caplog: pytest.LogCaptureFixture) -> None:
    """The expired token goes at once, the one that expires soon when it expires (the
    cleaner comes back for it then: nothing else would, its informers never resync),
    the one without an expiration never. When the cleaner decided to delete is its log
    line's time, which must not be before the expiration."""
    caplog.set_level(logging.INFO, logger=TokenCleaner.__module__)
    secrets = admin_client.resource("secrets")
    soon_secret = token_secret(generate_token(), ttl=timedelta(seconds=3))
    await secrets.create(soon_secret)
    soon = soon_secret["metadata"]["name"]
    expires = bt.parse_expiration(bt.secret_value(soon_secret, bt.EXPIRATION_KEY))
    assert expires is not None
    expired = await create_token(admin_client, now=datetime.now(UTC) - timedelta(days=1))
    forever = await create_token(admin_client, ttl=None)
    # an expired "token" that is not of the bootstrap token type is none of its business
    opaque = token_secret(generate_token(), now=datetime.now(UTC) - timedelta(days=1))
    opaque["type"] = "Opaque"
    await secrets.create(opaque)

    def name(token: str) -> str:
        return f"bootstrap-token-{token.split('.')[0]}"

    async def gone(secret_name: str) -> bool:
        try:
            await secrets.get(secret_name, "kube-system")
        except NotFound:
            return True
        return False

    await eventually(lambda: gone(name(expired)), what="the expired token deleted")
    await eventually(lambda: gone(soon), timeout=60, what="the token deleted at its expiry")
    decided = [record.created for record in caplog.records
               if record.getMessage().endswith(f"kube-system/{soon}")]
    assert len(decided) == 1, caplog.text
    assert decided[0] >= expires.timestamp(), "deleted before it expired"
    assert not await gone(name(forever))
    assert await secrets.get(opaque["metadata"]["name"], "kube-system")


def expected_signature(kubeconfig: str, token: str) -> str:
    """The detached JWS, computed here from RFC 7515: HS256 keyed with the secret half."""
    token_id, secret = token.split(".")

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    header = b64(json.dumps({"alg": "HS256", "kid": token_id}, separators=(",", ":")).encode())
    mac = hmac.new(secret.encode(), f"{header}.{b64(kubeconfig.encode())}".encode(),
                   hashlib.sha256).digest()
    return f"{header}..{b64(mac)}"


async def signatures(client: Client) -> dict[str, str]:
    found = await client.resource("configmaps").get("cluster-info", "kube-public")
    return {key: value for key, value in found["data"].items() if key.startswith("jws-")}


async def test_the_bootstrap_signer_signs_cluster_info_and_drops_a_deleted_tokens_signature(
        admin_client: Client, controllers: ControllerManager, cluster_info: Obj) -> None:
    signing = await create_token(admin_client)
    not_signing = await create_token(admin_client, usages=("authentication",))
    key = f"jws-kubeconfig-{signing.split('.')[0]}"

    async def signed() -> dict[str, str] | None:
        found = await signatures(admin_client)
        return found if key in found else None

    found = await eventually(signed, what="cluster-info signed")
    assert found[key] == expected_signature(cluster_info["data"]["kubeconfig"], signing)
    assert f"jws-kubeconfig-{not_signing.split('.')[0]}" not in found

    await admin_client.resource("secrets").delete(f"bootstrap-token-{signing[:6]}",
                                                  "kube-system")

    async def dropped() -> bool:
        return key not in await signatures(admin_client)

    await eventually(dropped, what="the deleted token's signature removed")


# -- discovery, as kubeadm join -------------------------------------------------------------

async def signed_token(client: Client) -> str:
    """A token whose signature is in cluster-info already."""
    token = await create_token(client)

    async def signed() -> bool:
        return f"jws-kubeconfig-{token[:6]}" in await signatures(client)

    await eventually(signed, what="cluster-info signed")
    return token


async def test_discovery_trusts_the_cluster_through_the_token_and_the_ca_hash(
        server: SecuredServer, admin_client: Client, controllers: ControllerManager,
        cluster_info: Obj, fast_tmp: Path) -> None:
    token = await signed_token(admin_client)
    found = await discover(server.url, token, [ca_cert_hash(server.ca.cert_pem)], timeout=60)
    assert found == (server.url, server.ca.cert_pem)
    # the kubelet's --bootstrap-kubeconfig, written from what discovery found
    path = write_bootstrap_kubeconfig(fast_tmp / "bootstrap-kubelet.conf", found.server,
                                      found.ca_pem, token)
    assert (whoami(path) or {}).get("username") == f"system:bootstrap:{token[:6]}"


async def test_discovery_refuses_a_ca_that_is_not_pinned(
        server: SecuredServer, admin_client: Client, controllers: ControllerManager,
        cluster_info: Obj) -> None:
    token = await signed_token(admin_client)
    with pytest.raises(DiscoveryError) as refused:
        await discover(server.url, token, [ca_cert_hash(pki.new_ca().cert_pem)], timeout=60)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("couldn't validate the identity of the API Server: cluster CA "
                              "found in cluster-info ConfigMap is invalid: none of the "
                              f'public keys "{ca_cert_hash(server.ca.cert_pem)}" are pinned')
    with pytest.raises(DiscoveryError, match="no CA certificate hash"):
        await discover(server.url, token, [], timeout=60)
    with pytest.raises(DiscoveryError, match="invalid discovery token CA certificate hash"):
        await discover(server.url, token, ["md5:1234"], timeout=60)


async def test_discovery_refuses_a_token_that_did_not_sign_cluster_info(
        server: SecuredServer, admin_client: Client, controllers: ControllerManager,
        cluster_info: Obj) -> None:
    token = await signed_token(admin_client)
    pins = [ca_cert_hash(server.ca.cert_pem)]
    wrong_secret = token[:7] + "0" * 16
    with pytest.raises(DiscoveryError, match="failed to verify JWS signature of received "
                                             "cluster info object, can't trust this API "
                                             "Server"):
        await discover(server.url, wrong_secret, [], timeout=60,
                       unsafe_skip_ca_verification=True)
    # with the CA pinned, the server is asked: its 401 says it is the token that is wrong
    with pytest.raises(DiscoveryError, match=f'token id "{token[:6]}" is invalid for this '
                                             "cluster or it has expired \\(the API server "
                                             "answers 401 Unauthorized to it\\)"):
        await discover(server.url, wrong_secret, pins, timeout=60)
    # a token the server does not know: its 401 answers at once, in kubeadm's words
    # (the CA pinned first), rather than a wait for a signature that never comes
    unknown = generate_token()
    started = time.monotonic()
    with pytest.raises(DiscoveryError, match=f'token id "{unknown[:6]}" is invalid for this '
                                             "cluster or it has expired \\(the API server "
                                             "answers 401 Unauthorized to it\\)"):
        await discover(server.url, unknown, pins, timeout=120)
    assert time.monotonic() - started < 60
    # a good token that signs nothing (authentication only): it waits out its timeout
    unsigned = await create_token(admin_client, usages=("authentication",))
    started = time.monotonic()
    with pytest.raises(DiscoveryError, match="could not find a JWS signature in the "
                                             f"cluster-info ConfigMap for token ID "
                                             f"'{unsigned[:6]}'"):
        await discover(server.url, unsigned, pins, timeout=1)
    assert time.monotonic() - started < 30  # it gave up at its timeout, not never



async def test_a_joining_node_sees_the_kube_proxy_daemonset_through_kubeadms_role(
        server: SecuredServer, admin_client: Client) -> None:
    """`join` reads kube-system/kube-proxy with its token to learn whether the cluster
    runs kube-proxy as its DaemonSet: without kubeadm's Role for the node token's group
    (`up --layout processes` makes none) it reads nothing, with it the ConfigMap."""
    token = await create_token(admin_client, description="for a node")
    await authenticated(server, token)
    assert await kube_proxy_config_map(server.url, token, server.ca.cert_pem) is None
    addons = Addons(server=server.url, cluster_cidr="10.244.0.0/16", cluster_dns="10.96.0.10",
                    images={"kube-proxy": "localhost/minikube-py/kube-proxy:test"},
                    tracing_endpoint="http://127.0.0.1:4318")
    for obj in kube_proxy_objects(addons):
        if obj["kind"] in ("ConfigMap", "Role", "RoleBinding"):
            group = obj["apiVersion"].rpartition("/")[0]
            await admin_client.resource(obj["kind"].lower() + "s", group).create(obj)

    async def readable() -> Obj | None:
        return await kube_proxy_config_map(server.url, token, server.ca.cert_pem)

    config_map = await eventually(readable, what="the token to read kube-system/kube-proxy")
    assert config_map["metadata"]["name"] == "kube-proxy"
    assert "config.conf" in config_map["data"]
