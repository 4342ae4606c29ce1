"""ServiceAccount tokens: `kubectl create token` (the TokenRequest API), the token as a
credential (who it names, what RBAC lets it do, how it stops working) and TokenReview,
against an API server with TLS, RBAC and a signing key."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from kubernetes import client, config

from minikube_py.apiserver.auth.serviceaccount_tokens import DEFAULT_ISSUER, Binding, TokenIssuer
from minikube_py.client.errors import Unauthorized
from minikube_py.client.rest import Client
from minikube_py.controllers.clientbuilder import ServiceAccountClients
from minikube_py.security import pki
from tests.test_security import SecuredServer, admin_cert, kubectl, server_of_its_own


@pytest.fixture(scope="module")
async def server(fast_tmp: Path) -> AsyncIterator[SecuredServer]:
    directory = fast_tmp / "tokens"
    directory.mkdir(parents=True, exist_ok=True)
    ca = pki.new_ca()
    signing = pki.issue(ca, "service-accounts", client=True)  # only its key is used
    signing.write(directory, "sa")
    async with server_of_its_own(
            directory, ca,
            f"--service-account-signing-key-file={directory / 'sa.key'}") as started:
        yield started


@pytest.fixture(scope="module")
def admin(server: SecuredServer) -> Path:
    return server.kubeconfig("admin", cert=admin_cert(server.ca))


def test_a_service_account_token_names_the_account_and_rbac_governs_it(
        server: SecuredServer, admin: Path) -> None:
    kubectl(admin, "create", "namespace", "robots")
    assert kubectl(admin, "create", "serviceaccount", "robot", "-n", "robots").returncode == 0
    token = kubectl(admin, "create", "token", "robot", "-n", "robots").stdout.strip()
    assert token.count(".") == 2
    robot = server.kubeconfig("robot", token=token)
    whoami = json.loads(kubectl(robot, "auth", "whoami", "-o", "json").stdout)
    uid = json.loads(kubectl(admin, "get", "sa", "robot", "-n", "robots", "-o", "json"
                             ).stdout)["metadata"]["uid"]
    user = whoami["status"]["userInfo"]
    assert (user["username"], user["uid"], user["groups"]) == (
        "system:serviceaccount:robots:robot", uid,
        ["system:serviceaccounts", "system:serviceaccounts:robots", "system:authenticated"])
    assert user["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("JTI=")
    denied = kubectl(robot, "get", "pods", "-n", "robots")
    assert 'User "system:serviceaccount:robots:robot" cannot list resource "pods"' in (
        denied.stderr)
    kubectl(admin, "create", "rolebinding", "robot-views", "--clusterrole=view",
            "--serviceaccount=robots:robot", "-n", "robots")
    deadline = time.monotonic() + 60
    while kubectl(robot, "get", "pods", "-n", "robots").returncode != 0:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    # a deleted (even if recreated) account's tokens name nobody any more
    kubectl(admin, "delete", "serviceaccount", "robot", "-n", "robots")
    kubectl(admin, "create", "serviceaccount", "robot", "-n", "robots")
    deadline = time.monotonic() + 60
    while "Unauthorized" not in kubectl(robot, "get", "pods", "-n", "robots").stderr:
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_token_requests_are_checked_and_token_reviews_answer(
        server: SecuredServer, admin: Path) -> None:
    kubectl(admin, "create", "namespace", "reviews")
    kubectl(admin, "create", "serviceaccount", "reviewed", "-n", "reviews")
    short = kubectl(admin, "create", "token", "reviewed", "-n", "reviews", "--duration=60s")
    assert short.returncode == 1
    assert ("spec.expirationSeconds: Invalid value: 60: may not specify a duration less "
            "than 10 minutes") in short.stderr
    missing = kubectl(admin, "create", "token", "nobody", "-n", "reviews")
    assert 'serviceaccounts "nobody" not found' in missing.stderr
    token = kubectl(admin, "create", "token", "reviewed", "-n", "reviews",
                    "--audience=https://kubernetes.default.svc.cluster.local").stdout.strip()
    api = config.new_client_from_config(config_file=str(admin))
    try:
        authn = client.AuthenticationV1Api(api)
        review = authn.create_token_review({"spec": {"token": token}})
        assert review.status.authenticated is True
        assert review.status.user.username == "system:serviceaccount:reviews:reviewed"
        # a token this cluster did not sign (same issuer, another key)
        forged, _ = TokenIssuer(ec.generate_private_key(ec.SECP256R1()), [], DEFAULT_ISSUER,
                                []).sign(Binding("reviews", "reviewed", "x"),
                                         [DEFAULT_ISSUER], 3600)
        review = authn.create_token_review({"spec": {"token": forged}})
        assert (review.status.authenticated, review.status.error) == (
            False, "invalid signature")
    finally:
        api.close()
    forged_config = server.kubeconfig("forged", token=forged)
    assert "Unauthorized" in kubectl(forged_config, "get", "pods").stderr


def test_serviceaccount_admission_names_the_account_and_mounts_its_token(
        server: SecuredServer, admin: Path) -> None:
    """The ServiceAccount admission plugin: `default` unless named; the account must
    exist; its token, the cluster CA and the namespace projected at upstream's path."""
    kubectl(admin, "create", "namespace", "mounts")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "mounts"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}],
                    "initContainers": [{"name": "i", "image": "busybox"}]}}
    # No serviceaccount controller runs here, so the namespace has no `default` account.
    refused = kubectl(admin, "create", "-f", "-", stdin=json.dumps(pod))
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "web" is forbidden: '
        'error looking up service account mounts/default: serviceaccount "default" not found')
    assert kubectl(admin, "create", "serviceaccount", "default", "-n", "mounts").returncode == 0
    made = kubectl(admin, "create", "-f", "-", "-o", "json", stdin=json.dumps(pod))
    assert made.returncode == 0, made.stderr
    spec = json.loads(made.stdout)["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    [volume] = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == 21
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt",
                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}
    for container in (*spec["initContainers"], *spec["containers"]):
        assert container["volumeMounts"] == [{
            "name": volume["name"], "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]

    # An account that opts out, or a pod that does, gets no token.
    quiet = {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": "quiet", "namespace": "mounts"},
             "automountServiceAccountToken": False}
    assert kubectl(admin, "create", "-f", "-", stdin=json.dumps(quiet)).returncode == 0
    pod["metadata"]["name"] = "quiet-web"
    pod["spec"]["serviceAccountName"] = "quiet"
    made = kubectl(admin, "create", "-f", "-", "-o", "json", stdin=json.dumps(pod))
    assert "volumes" not in json.loads(made.stdout)["spec"]
    pod["metadata"]["name"] = "nobody"
    pod["spec"]["serviceAccountName"] = "nobody"
    missing = kubectl(admin, "create", "-f", "-", stdin=json.dumps(pod))
    assert 'serviceaccount "nobody" not found' in missing.stderr


async def test_controllers_get_clients_that_are_their_own_service_accounts(
        server: SecuredServer) -> None:
    """--use-service-account-credentials: the controller-manager's identity makes the
    account and asks its token; the client it hands the controller is that account."""
    async with Client.from_kubeconfig(server.kubeconfig("admin", cert=admin_cert(server.ca))
                                      ) as root:
        accounts = ServiceAccountClients(root)
        try:
            own = await accounts.client_for("replicaset-controller")
            review = await own.request(
                "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
            assert review["status"]["userInfo"]["username"] == (
                "system:serviceaccount:kube-system:replicaset-controller")
            assert await accounts.client_for("replicaset-controller") is own
            # a renewed token replaces the old one for later requests
            own.set_token("not-a-token")
            with pytest.raises(Unauthorized):
                await own.resource("pods").list("default")
            own.set_token(await accounts._token("replicaset-controller"))
            assert (await own.request(
                "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                body={"apiVersion": "authentication.k8s.io/v1",
                      "kind": "SelfSubjectReview"}))["status"]["userInfo"]["username"] == (
                "system:serviceaccount:kube-system:replicaset-controller")
        finally:
            await accounts.close()
