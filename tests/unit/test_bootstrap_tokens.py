"""Bootstrap tokens without a server: the token and its Secret (api/bootstraptoken.py),
the authenticator's checks (apiserver/auth/bootstraptoken.py) and kubeadm's side of things
(cluster/bootstraptoken.py). Signatures and hashes are checked against upstream's test
vectors and against independent computations (hmac, openssl)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from minikube_py.api import Obj
from minikube_py.api import bootstraptoken as bt
from minikube_py.apiserver.auth.authentication import Authenticator, UserInfo
from minikube_py.apiserver.auth.bootstrappolicy import bootstrap_role_bindings, bootstrap_roles
from minikube_py.apiserver.auth.bootstraptoken import BootstrapTokenAuthenticator
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.cluster.bootstraptoken import (
    NODE_TOKEN_GROUP,
    bootstrap_kubeconfig,
    ca_cert_hash,
    cluster_info_configmap,
    cluster_info_rbac,
    generate_token,
    node_bootstrap_rbac,
    token_secret,
    write_bootstrap_kubeconfig,
)
from minikube_py.controllers.bootstrapsigner import BootstrapSigner
from minikube_py.controllers.manager import select_controllers
from minikube_py.controllers.registry import ALL_CONTROLLERS
from minikube_py.controllers.tokencleaner import TokenCleaner
from minikube_py.security import pki

TOKEN = "abcdef.0123456789abcdef"
NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def secret(data: dict[str, str], *, name: str = "bootstrap-token-abcdef",
           type_: str = bt.SECRET_TYPE, **metadata: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "type": type_,
            "metadata": {"name": name, "namespace": "kube-system", **metadata},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


GOOD = {"token-id": "abcdef", "token-secret": "0123456789abcdef",
        "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
        "expiration": "2030-01-03T03:04:05Z",
        "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token"}


# -- the token and its Secret ---------------------------------------------------------------

def test_a_token_is_six_and_sixteen_lowercase_alphanumerics() -> None:
    assert bt.parse_token(TOKEN) == ("abcdef", "0123456789abcdef")
    for bad in ("ABCDEF.0123456789abcdef", "abcdef.0123456789abcde", "abcdef0123456789abcdef",
                "abcdef.0123456789abcdef\n", "abc.def.0123456789abcdef", ""):
        with pytest.raises(ValueError):
            bt.parse_token(bad)


def test_generated_tokens_are_well_formed_and_differ() -> None:
    tokens = {generate_token() for _ in range(50)}
    assert len(tokens) == 50
    for token in tokens:
        bt.parse_token(token)


def test_the_detached_jws_matches_upstreams_test_vectors() -> None:
    content = "Hello from the other side. I must have called a thousand times."
    assert bt.detached_signature(content, "joshua", "my voice is my passcode") == (
        "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8")
    assert bt.detached_signature("", "joshua", "my voice is my passcode") == (
        "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk")


def test_the_detached_jws_is_hs256_over_header_and_content_keyed_by_the_secret_half() -> None:
    content = "apiVersion: v1\nkind: Config\n"
    signature = bt.detached_signature(content, "abcdef", "0123456789abcdef")
    header, payload, mac = signature.split(".")
    assert payload == "", "the payload is detached"
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "HS256",
                                                                   "kid": "abcdef"}
    signed = f"{header}.{b64url(content.encode())}".encode()
    expected = hmac.new(b"0123456789abcdef", signed, hashlib.sha256).digest()
    assert mac == b64url(expected)
    assert bt.signature_is_valid(signature, content, "abcdef", "0123456789abcdef")
    assert not bt.signature_is_valid(signature, content + " ", "abcdef", "0123456789abcdef")
    assert not bt.signature_is_valid(signature, content, "abcdef", "0123456789abcdeX")
    assert not bt.signature_is_valid(signature + "x", content, "abcdef", "0123456789abcdef")


def test_expiration_is_rfc3339_and_an_unreadable_one_has_expired() -> None:
    assert bt.time_to_expiry(secret({}), NOW) == (0.0, False), "no expiration: never"
    assert bt.time_to_expiry(secret({"expiration": "2030-01-02T03:05:05Z"}), NOW) == (
        60.0, False)
    assert bt.time_to_expiry(secret({"expiration": "2030-01-02T04:05:05+01:00"}), NOW) == (
        60.0, False)
    for dead in ("2030-01-02T03:04:05Z", "2029-12-31T00:00:00Z", "tomorrow",
                 "2030-01-03T03:04:05", "2030-01-03"):
        assert bt.time_to_expiry(secret({"expiration": dead}), NOW) == (0.0, True), dead


def test_groups_are_the_bootstrappers_and_valid_extra_groups_sorted_once() -> None:
    assert bt.token_groups(secret({})) == ["system:bootstrappers"]
    extra = "system:bootstrappers:b,system:bootstrappers:a,system:bootstrappers:b"
    assert bt.token_groups(secret({"auth-extra-groups": extra})) == [
        "system:bootstrappers", "system:bootstrappers:a", "system:bootstrappers:b"]
    for bad in ("system:masters", "system:bootstrappers:", "system:bootstrappers:a,",
                "system:bootstrappers:A", "system:bootstrappers:a-"):
        with pytest.raises(ValueError, match="bootstrap group"):
            bt.token_groups(secret({"auth-extra-groups": bad}))


def test_a_token_signs_only_when_named_rightly_marked_and_alive() -> None:
    assert bt.signing_token(secret(GOOD), NOW) == ("abcdef", "0123456789abcdef")
    assert bt.signing_token(secret(GOOD, name="bootstrap-token-zzzzzz"), NOW) is None
    assert bt.signing_token(secret(GOOD, name="my-token"), NOW) is None
    assert bt.signing_token(secret({**GOOD, "usage-bootstrap-signing": "yes"}), NOW) is None
    assert bt.signing_token(secret({**GOOD, "expiration": "2020-01-01T00:00:00Z"}),
                            NOW) is None
    assert bt.signing_token(secret({**GOOD, "token-secret": ""}), NOW) is None


# -- the authenticator ----------------------------------------------------------------------

def authenticator(*found: Obj) -> BootstrapTokenAuthenticator:
    by_name = {s["metadata"]["name"]: s for s in found}
    return BootstrapTokenAuthenticator(by_name.get, clock=lambda: NOW)


def test_a_valid_token_is_system_bootstrap_id_in_the_bootstrappers() -> None:
    user = authenticator(secret(GOOD)).authenticate(TOKEN)
    assert user.name == "system:bootstrap:abcdef"
    assert user.groups == ("system:bootstrappers",
                           "system:bootstrappers:kubeadm:default-node-token",
                           "system:authenticated")


@pytest.mark.parametrize("flaw", [
    {"token-secret": "0123456789abcdeX"},
    {"token-id": "zzzzzz"},
    {"expiration": "2030-01-02T03:04:04Z"},
    {"expiration": "soon"},
    {"usage-bootstrap-authentication": "false"},
    {"auth-extra-groups": "system:masters"},
])
def test_a_secret_that_does_not_check_out_is_refused(flaw: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="invalid bootstrap token"):
        authenticator(secret({**GOOD, **flaw})).authenticate(TOKEN)


def test_a_missing_usage_a_wrong_type_a_deleting_or_absent_secret_is_refused() -> None:
    without_usage = {k: v for k, v in GOOD.items() if k != "usage-bootstrap-authentication"}
    for found in (secret(without_usage), secret(GOOD, type_="Opaque"),
                  secret(GOOD, deletionTimestamp="2030-01-02T03:04:00Z")):
        with pytest.raises(ValueError):
            authenticator(found).authenticate(TOKEN)
    with pytest.raises(ValueError):
        authenticator().authenticate(TOKEN)
    with pytest.raises(ValueError, match="not a bootstrap token"):
        authenticator(secret(GOOD)).authenticate("abcdef.short")


def test_the_token_file_comes_before_bootstrap_tokens_as_upstreams_chain() -> None:
    chain = Authenticator({TOKEN: UserInfo("from-the-file", "1")},
                          bootstrap_tokens=authenticator(secret(GOOD)).authenticate)
    assert chain.authenticate_token(TOKEN).name == "from-the-file"
    other = "ghijkl.0123456789abcdef"
    with pytest.raises(ValueError):
        chain.authenticate_token(other)
    assert Authenticator(bootstrap_tokens=authenticator(secret(GOOD)).authenticate
                         ).authenticate_token(TOKEN).name == "system:bootstrap:abcdef"
    with pytest.raises(ValueError):  # the flag off: nobody checks bootstrap tokens
        Authenticator().authenticate_token(TOKEN)


# -- the controllers' place -----------------------------------------------------------------

def test_the_bootstrap_controllers_run_only_when_named() -> None:
    everything = select_controllers(["*"], ALL_CONTROLLERS)
    assert BootstrapSigner not in everything and TokenCleaner not in everything
    named = select_controllers(["*", "bootstrapsigner", "tokencleaner"], ALL_CONTROLLERS)
    assert set(named) == {*everything, BootstrapSigner, TokenCleaner}


def test_the_bootstrap_controllers_roles_are_namespaced_to_what_they_touch() -> None:
    roles = {(r["metadata"]["namespace"], r["metadata"]["name"]): r["rules"]
             for r in bootstrap_roles()}
    assert roles[("kube-system", "system:controller:token-cleaner")][0] == {
        "apiGroups": [""], "resources": ["secrets"],
        "verbs": ["delete", "get", "list", "watch"]}
    assert roles[("kube-system", "system:controller:bootstrap-signer")] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}]
    assert {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"],
            "verbs": ["update"]} in roles[("kube-public", "system:controller:bootstrap-signer")]
    bindings = {(b["metadata"]["namespace"], b["metadata"]["name"]): b["subjects"]
                for b in bootstrap_role_bindings()}
    assert set(bindings) == set(roles)
    assert bindings[("kube-public", "system:controller:bootstrap-signer")] == [
        {"kind": "ServiceAccount", "name": "bootstrap-signer", "namespace": "kube-system"}]


# -- kubeadm's side -------------------------------------------------------------------------

def decoded(obj: Obj) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in obj["data"].items()}


def test_the_token_secret_is_what_kubeadm_token_create_writes() -> None:
    created = token_secret(TOKEN, now=NOW, description="for node-2")
    assert created["metadata"] == {"name": "bootstrap-token-abcdef", "namespace": "kube-system"}
    assert created["type"] == "bootstrap.kubernetes.io/token"
    assert decoded(created) == {
        "token-id": "abcdef", "token-secret": "0123456789abcdef", "description": "for node-2",
        "expiration": "2030-01-03T03:04:05Z", "usage-bootstrap-signing": "true",
        "usage-bootstrap-authentication": "true", "auth-extra-groups": NODE_TOKEN_GROUP}
    forever = decoded(token_secret(TOKEN, ttl=None, usages=("signing",), extra_groups=()))
    assert forever == {"token-id": "abcdef", "token-secret": "0123456789abcdef",
                       "usage-bootstrap-signing": "true"}
    assert decoded(token_secret(TOKEN, ttl=timedelta(minutes=5), now=NOW))["expiration"] == (
        "2030-01-02T03:09:05Z")
    with pytest.raises(ValueError, match="usage"):
        token_secret(TOKEN, usages=("signing", "stealing"))
    with pytest.raises(ValueError, match="bootstrap group"):
        token_secret(TOKEN, extra_groups=("system:masters",))
    with pytest.raises(ValueError):
        token_secret("not-a-token")


def test_the_ca_cert_hash_is_the_sha256_of_the_public_key_as_openssl_computes_it(
        tmp_path: Path) -> None:
    ca = pki.new_ca()
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    # kubeadm's documented way: openssl x509 -pubkey | openssl pkey -pubin -outform der
    public = subprocess.run(["openssl", "x509", "-pubkey", "-noout", "-in",
                             str(tmp_path / "ca.crt")], capture_output=True, check=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=public,
                         capture_output=True, check=True).stdout
    assert ca_cert_hash(ca.cert_pem) == "sha256:" + hashlib.sha256(der).hexdigest()
    assert ca_cert_hash(ca.cert_pem) != ca_cert_hash(pki.new_ca().cert_pem)


def test_cluster_info_holds_a_kubeconfig_with_the_server_and_ca_only() -> None:
    ca = pki.new_ca()
    config_map = cluster_info_configmap("https://10.0.0.1:6443", ca.cert_pem)
    assert config_map["metadata"] == {"name": "cluster-info", "namespace": "kube-public"}
    assert list(config_map["data"]) == ["kubeconfig"]
    document = yaml.safe_load(config_map["data"]["kubeconfig"])
    assert document == {
        "apiVersion": "v1", "kind": "Config", "contexts": None, "current-context": "",
        "users": None, "clusters": [{"name": "", "cluster": {
            "server": "https://10.0.0.1:6443",
            "certificate-authority-data": base64.b64encode(ca.cert_pem).decode()}}]}


def test_kubeadm_lets_anonymous_read_cluster_info_and_bootstrappers_ask_for_certificates(
        ) -> None:
    role, binding = cluster_info_rbac()
    assert (role["kind"], role["metadata"]) == ("Role", {
        "name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"})
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"],
                              "resourceNames": ["cluster-info"], "verbs": ["get"]}]
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                    "name": "system:anonymous"}]
    bound = {b["metadata"]["name"]: (b["roleRef"]["name"], b["subjects"][0]["name"])
             for b in node_bootstrap_rbac()}
    csr = "system:certificates.k8s.io:certificatesigningrequests:"
    assert bound == {
        "kubeadm:kubelet-bootstrap": ("system:node-bootstrapper", NODE_TOKEN_GROUP),
        "kubeadm:node-autoapprove-bootstrap": (csr + "nodeclient", NODE_TOKEN_GROUP),
        "kubeadm:node-autoapprove-certificate-rotation": (csr + "selfnodeclient",
                                                          "system:nodes")}


def test_the_bootstrap_kubeconfig_carries_server_ca_and_token(tmp_path: Path) -> None:
    ca = pki.new_ca()
    document = bootstrap_kubeconfig("https://10.0.0.1:6443", ca.cert_pem, TOKEN)
    assert document["current-context"] == "tls-bootstrap-token-user@kubernetes"
    path = write_bootstrap_kubeconfig(tmp_path / "bootstrap-kubelet.conf",
                                      "https://10.0.0.1:6443", ca.cert_pem, TOKEN)
    assert path.stat().st_mode & 0o777 == 0o600
    config = load_kubeconfig(path)
    assert (config.server, config.token) == ("https://10.0.0.1:6443", TOKEN)
    assert config.ca_file is not None and Path(config.ca_file).read_bytes() == ca.cert_pem
    with pytest.raises(ValueError):
        bootstrap_kubeconfig("https://10.0.0.1:6443", ca.cert_pem, "no-token")
