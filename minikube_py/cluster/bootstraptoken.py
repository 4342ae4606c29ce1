"""Bootstrap tokens from kubeadm's side: what `kubeadm init` writes so nodes can join,
and what `kubeadm join` checks before it trusts the cluster (upstream
cmd/kubeadm/app/phases/bootstraptoken and cmd/kubeadm/app/discovery/token).

    on the control plane (kubeadm init, kubeadm token create)
      token_secret            kube-system/bootstrap-token-<id>: the token, its TTL,
                              usages and extra groups
      cluster_info_configmap  kube-public/cluster-info: a kubeconfig naming the server
                              and its CA, no credentials
      cluster_info_rbac       system:anonymous may get cluster-info
      node_bootstrap_rbac     the token's group may ask for a node certificate, and
                              have it approved
      (the bootstrapsigner controller then adds jws-kubeconfig-<id> to cluster-info)

    on the joining node (kubeadm join SERVER --token T --discovery-token-ca-cert-hash H)
      discover                read cluster-info over TLS trusting nobody yet
                              -> its jws-kubeconfig-<id> must be the token's signature
                                 of its kubeconfig: only a token holder could make it
                                 (none there yet, or one that does not verify: pin the CA
                                 by the hash, then ask that server whether it takes the
                                 token; a 401 fails at once, in kubeadm's words, where
                                 kubeadm would wait out its timeout)
                              -> the kubeconfig's CA must hash to H: the server is the
                                 one the admin meant
                              -> read it again, now trusting that CA: the same
      bootstrap_kubeconfig    that server and CA, with the token as credential: what
                              the kubelet's --bootstrap-kubeconfig reads to ask for its
                              own certificate (TLS bootstrap, the next step)
      kube_proxy_config_map   with the token: does the cluster run kube-proxy as its
                              DaemonSet (then the node starts no proxy of its own)

The token proves the ConfigMap (an attacker without it cannot sign); the CA hash proves
the server (an attacker who learnt the token still cannot fake the CA). Everything here
is a pure function but `discover`, `check_token` and `kube_proxy_config_map`,
which make the requests.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import secrets
import ssl
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import orjson
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from minikube_py.api import Obj
from minikube_py.api import bootstraptoken as bt
from minikube_py.api.meta import rfc3339
from minikube_py.client import transport
from minikube_py.cluster.kubeconfig import write_kubeconfig_document

DEFAULT_TTL = timedelta(hours=24)
DEFAULT_USAGES = bt.KNOWN_USAGES
NODE_TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token"
DEFAULT_GROUPS = (NODE_TOKEN_GROUP,)
NODES_GROUP = "system:nodes"
CLUSTER_INFO_ROLE = "kubeadm:bootstrap-signer-clusterinfo"
BOOTSTRAP_CLUSTER = "kubernetes"
BOOTSTRAP_USER = "tls-bootstrap-token-user"
DISCOVERY_TIMEOUT = 300.0  # kubeadm's default discovery timeout: 5 minutes
RETRY_INTERVAL = 5.0  # kubeadm's DiscoveryRetryInterval
TOKEN_GRACE = 5.0  # how long a token's 401 must last to be believed (check_token)
RBAC = "rbac.authorization.k8s.io"
KUBE_SYSTEM = "kube-system"
KUBE_PROXY_CONFIG_MAP = "kube-proxy"
_TOKEN_CHARACTERS = "0123456789abcdefghijklmnopqrstuvwxyz"
_PIN = re.compile(r"([0-9a-fA-F]{64})")


class DiscoveryError(Exception):
    """The cluster could not be trusted (or reached): one line saying why."""


class DiscoveredCluster(NamedTuple):
    """What discovery returns: where the API server is, and the CA that signs it."""

    server: str
    ca_pem: bytes


# -- the token and its Secret ------------------------------------------------------------

def generate_token() -> str:
    """A new random token, "<6>.<16>" characters drawn uniformly from [a-z0-9]
    (GenerateBootstrapToken)."""
    def draw(length: int) -> str:
        return "".join(secrets.choice(_TOKEN_CHARACTERS) for _ in range(length))

    return f"{draw(6)}.{draw(16)}"


def token_secret(token: str, *, ttl: timedelta | None = DEFAULT_TTL,
                 usages: tuple[str, ...] = DEFAULT_USAGES,
                 extra_groups: tuple[str, ...] = DEFAULT_GROUPS, description: str = "",
                 now: datetime | None = None) -> Obj:
    """BootstrapTokenToSecret: the Secret kubeadm creates for a token (defaults as
    `kubeadm token create`: 24 hours, signing and authentication, the default node
    token group). A ttl of None or zero never expires. ValueError for a malformed
    token, an unknown usage or an extra group outside system:bootstrappers:*."""
    token_id, token_secret_half = bt.parse_token(token)
    unknown = sorted(set(usages) - set(bt.KNOWN_USAGES))
    if unknown:
        raise ValueError(f"invalid bootstrap token usage string: {','.join(unknown)}, "
                         f"valid usage options: {','.join(bt.KNOWN_USAGES)}")
    for group in extra_groups:
        bt.validate_group(group)
    data = {bt.TOKEN_ID_KEY: token_id, bt.TOKEN_SECRET_KEY: token_secret_half}
    if description:
        data[bt.DESCRIPTION_KEY] = description
    if ttl:
        data[bt.EXPIRATION_KEY] = rfc3339((now or datetime.now(UTC)) + ttl)
    for usage in usages:
        data[bt.USAGE_PREFIX + usage] = "true"
    if extra_groups:
        data[bt.EXTRA_GROUPS_KEY] = ",".join(extra_groups)
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": bt.secret_name(token_id), "namespace": bt.TOKEN_NAMESPACE},
            "type": bt.SECRET_TYPE,
            "data": {key: base64.b64encode(value.encode()).decode()
                     for key, value in data.items()}}


def ca_cert_hash(ca_pem: bytes) -> str:
    """pubkeypin.Hash: "sha256:<hex>" of the CA certificate's DER SubjectPublicKeyInfo,
    what `kubeadm join --discovery-token-ca-cert-hash` pins (the first certificate of
    the PEM)."""
    certificate = x509.load_pem_x509_certificate(ca_pem)
    return f"sha256:{hashlib.sha256(_public_key_info(certificate)).hexdigest()}"


def _public_key_info(certificate: x509.Certificate) -> bytes:
    return certificate.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


# -- what the control plane publishes ------------------------------------------------------

def cluster_info_kubeconfig(server_url: str, ca_pem: bytes) -> str:
    """The `kubeconfig` of cluster-info as kubeadm writes it (clientcmd.Write of a
    config holding one unnamed cluster: the server and its CA, no user, no context)."""
    return (
        "apiVersion: v1\n"
        "clusters:\n"
        "- cluster:\n"
        f"    certificate-authority-data: {base64.b64encode(ca_pem).decode()}\n"
        f"    server: {server_url}\n"
        '  name: ""\n'
        "contexts: null\n"
        'current-context: ""\n'
        "kind: Config\n"
        "users: null\n")


def cluster_info_configmap(server_url: str, ca_pem: bytes) -> Obj:
    """CreateBootstrapConfigMapIfNotExists: kube-public/cluster-info, unsigned (the
    bootstrapsigner adds the signatures)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": bt.CLUSTER_INFO, "namespace": bt.CLUSTER_INFO_NAMESPACE},
            "data": {bt.KUBECONFIG_KEY: cluster_info_kubeconfig(server_url, ca_pem)}}


def cluster_info_rbac() -> list[Obj]:
    """CreateClusterInfoRBACRules: a Role and RoleBinding in kube-public letting
    system:anonymous get cluster-info, and nothing else."""
    metadata = {"name": CLUSTER_INFO_ROLE, "namespace": bt.CLUSTER_INFO_NAMESPACE}
    return [
        {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": dict(metadata),
         "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                    "resourceNames": [bt.CLUSTER_INFO], "verbs": ["get"]}]},
        {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": dict(metadata),
         "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": CLUSTER_INFO_ROLE},
         "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "system:anonymous"}]},
    ]


def node_bootstrap_rbac() -> list[Obj]:
    """The ClusterRoleBindings of kubeadm's bootstrap-token phase: the default node
    token's group may create CSRs (kubeadm:kubelet-bootstrap) and have a node client
    certificate approved (kubeadm:node-autoapprove-bootstrap); nodes may have the
    renewal of their own approved (kubeadm:node-autoapprove-certificate-rotation)."""
    def binding(name: str, role: str, group: str) -> Obj:
        return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": group}]}

    csr_role = "system:certificates.k8s.io:certificatesigningrequests:"
    return [
        binding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", NODE_TOKEN_GROUP),
        binding("kubeadm:node-autoapprove-bootstrap", csr_role + "nodeclient",
                NODE_TOKEN_GROUP),
        binding("kubeadm:node-autoapprove-certificate-rotation", csr_role + "selfnodeclient",
                NODES_GROUP),
    ]


# -- what the joining node does ------------------------------------------------------------

def bootstrap_kubeconfig(server: str, ca_pem: bytes, token: str) -> Obj:
    """The kubeconfig `kubeadm join` writes for the kubelet's --bootstrap-kubeconfig
    (bootstrap-kubelet.conf): the discovered server and CA, the token as credential."""
    bt.parse_token(token)
    context = f"{BOOTSTRAP_USER}@{BOOTSTRAP_CLUSTER}"
    return {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": BOOTSTRAP_CLUSTER, "cluster": {
            "certificate-authority-data": base64.b64encode(ca_pem).decode(),
            "server": server}}],
        "contexts": [{"name": context, "context": {"cluster": BOOTSTRAP_CLUSTER,
                                                  "user": BOOTSTRAP_USER}}],
        "current-context": context,
        "users": [{"name": BOOTSTRAP_USER, "user": {"token": token}}],
    }


def write_bootstrap_kubeconfig(path: Path, server: str, ca_pem: bytes, token: str) -> Path:
    """bootstrap_kubeconfig, written where the kubelet reads it (owner-only)."""
    return write_kubeconfig_document(path, bootstrap_kubeconfig(server, ca_pem, token))


async def discover(server: str, token: str, ca_cert_hashes: list[str], *,
                   timeout: float = DISCOVERY_TIMEOUT,
                   unsafe_skip_ca_verification: bool = False,
                   retry_interval: float = RETRY_INTERVAL) -> DiscoveredCluster:
    """RetrieveValidatedConfigInfo: the server and CA of the cluster at `server`
    (https://host:port, or host:port), trusted through the token's signature of
    cluster-info and the pinned CA hashes. Waits up to `timeout` seconds for the
    signature to appear; DiscoveryError (one line) when anything does not check out.
    Without hashes it refuses, unless told to skip the CA check (kubeadm's
    --discovery-token-unsafe-skip-ca-verification). `retry_interval`: how long to wait
    between reads of cluster-info while its signature is missing."""
    try:
        return await _discover(server if "://" in server else f"https://{server}",
                               token, ca_cert_hashes, timeout, unsafe_skip_ca_verification,
                               retry_interval)
    except DiscoveryError as error:
        raise DiscoveryError(f"couldn't validate the identity of the API Server: {error}"
                             ) from None


async def _discover(server: str, token: str, ca_cert_hashes: list[str], timeout: float,
                    unsafe_skip_ca_verification: bool, retry_interval: float
                    ) -> DiscoveredCluster:
    try:
        token_id, token_secret_half = bt.parse_token(token)
    except ValueError as error:
        raise DiscoveryError(str(error)) from None
    pins = _parse_pins(ca_cert_hashes)
    if not pins and not unsafe_skip_ca_verification:
        raise DiscoveryError("no CA certificate hash to pin (--discovery-token-ca-cert-hash);"
                             " refusing to trust the cluster CA unverified")
    deadline = time.monotonic() + timeout
    insecure = await _cluster_info(server, token_id, _trust_nobody(), deadline,
                                   retry_interval, (token, pins))
    try:
        content = _signed_kubeconfig(insecure, token_id, token_secret_half)
    except DiscoveryError:
        if pins:  # a server the hash vouches for: is it the token that is wrong?
            await _check_token_known(server, insecure, token, pins)
        raise
    cluster_server, ca_pem = _cluster_of(content)
    if not pins:
        return DiscoveredCluster(cluster_server, ca_pem)
    _check_pinned(ca_pem, pins)
    secure = await _cluster_info(server, token_id, _trust(ca_pem), deadline,
                                 retry_interval)
    if (secure.get("data") or {}).get(bt.KUBECONFIG_KEY) != content:
        raise DiscoveryError(f"the second kubeconfig from the {bt.CLUSTER_INFO} ConfigMap "
                             "(using validated TLS) was different from the first")
    return DiscoveredCluster(cluster_server, ca_pem)


def _parse_pins(hashes: list[str]) -> set[str]:
    """pubkeypin.Set.Allow: "sha256:<64 hex digits>" each, kept in lower case."""
    pins = set()
    for pin in hashes:
        form, _, value = pin.partition(":")
        if form.lower() != "sha256" or _PIN.fullmatch(value) is None:
            raise DiscoveryError(f"invalid discovery token CA certificate hash {pin!r}: "
                                 "expected sha256:<64 hex digits>")
        pins.add(value.lower())
    return pins


def _trust_nobody() -> ssl.SSLContext:
    """TLS that checks nothing: the first read, before anything is known."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _trust(ca_pem: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca_pem.decode())


async def _cluster_info(server: str, token_id: str, context: ssl.SSLContext,
                        deadline: float, retry_interval: float,
                        check_token: tuple[str, set[str]] | None = None) -> Obj:
    """getClusterInfo: GET kube-public/cluster-info anonymously until it carries a
    signature for the token's id, or the deadline passes (then the last reason).
    `check_token` (the token and the pins): while the signature is missing, ask the
    server whether it knows the token (_check_token_known)."""
    path = f"/api/v1/namespaces/{bt.CLUSTER_INFO_NAMESPACE}/configmaps/{bt.CLUSTER_INFO}"
    pool = transport.ConnectionPool(server, ssl_context=context,
                                    headers={"Accept": "application/json",
                                             "User-Agent": "minikube-py-join"})
    try:
        while True:
            reason = ""
            try:
                answer = await pool.request("GET", path, timeout=max(
                    1.0, min(30.0, deadline - time.monotonic())))
                if answer.status != 200:
                    reason = (f"failed to request the {bt.CLUSTER_INFO} ConfigMap: HTTP "
                              f"{answer.status} {_status_message(answer.body)}")
                else:
                    config_map = orjson.loads(answer.body)
                    if bt.JWS_PREFIX + token_id in (config_map.get("data") or {}):
                        return config_map
                    if check_token is not None and check_token[1]:
                        await _check_token_known(server, config_map, *check_token)
                    reason = (f"could not find a JWS signature in the {bt.CLUSTER_INFO} "
                              f"ConfigMap for token ID {token_id!r}")
            except (transport.TransportError, TimeoutError, orjson.JSONDecodeError) as error:
                reason = f"failed to request the {bt.CLUSTER_INFO} ConfigMap: {error}"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DiscoveryError(reason)
            await asyncio.sleep(min(retry_interval, remaining))
    finally:
        await pool.close()


async def _check_token_known(server: str, config_map: Obj, token: str,
                             pins: set[str]) -> None:
    """cluster-info has no signature for the token's id: either the signer has not
    made it yet, or the token is unknown or expired. Pin the CA by the hash first (a
    wrong hash refuses here, before the token is sent anywhere), then ask the server so
    trusted (check_token)."""
    _, ca_pem = _cluster_of(str((config_map.get("data") or {}).get(bt.KUBECONFIG_KEY) or ""))
    _check_pinned(ca_pem, pins)
    await check_token(server, token, ca_pem)


async def check_token(server: str, token: str, ca_pem: bytes) -> None:
    """Does the API server at `server` (trusted through `ca_pem` alone) take the token?
    A 401 says no: DiscoveryError in kubeadm's words. Anything else (or no answer) is
    not a refusal. (`kubeadm join` first sends the token when it reads the cluster's
    configuration, right after discovery.) A 401 is final once it lasts TOKEN_GRACE
    seconds: a token created a moment ago may not be in the server's cache yet."""
    token_id, _ = bt.parse_token(token)
    pool = transport.ConnectionPool(server, ssl_context=_trust(ca_pem), headers={
        "Accept": "application/json", "User-Agent": "minikube-py-join",
        "Authorization": f"Bearer {token}"})
    refused_until = time.monotonic() + TOKEN_GRACE
    try:
        while True:
            try:
                answer = await pool.request("GET", "/api", timeout=10.0)
            except (transport.TransportError, TimeoutError):
                return
            if answer.status != 401 or time.monotonic() >= refused_until:
                break
            await asyncio.sleep(0.5)
    finally:
        await pool.close()
    if answer.status == 401:
        raise DiscoveryError(
            f"token id \"{token_id}\" is invalid for this cluster or it has expired (the API "
            f"server answers 401 {_status_message(answer.body) or 'Unauthorized'} to it). "
            'Use "minikube-py token create" on the control-plane node to create a new '
            "valid token")


async def kube_proxy_config_map(server: str, token: str, ca_pem: bytes) -> Obj | None:
    """kube-system/kube-proxy, read with the token (kubeadm's proxy addon gives the
    default node token's group a Role to get it): the cluster runs kube-proxy as its
    DaemonSet, so a joining node starts only its kubelet. None when the cluster has no
    such ConfigMap or does not let the token read it (its proxy runs as a process on
    each node). A server that does not answer is a DiscoveryError."""
    pool = transport.ConnectionPool(server, ssl_context=_trust(ca_pem), headers={
        "Accept": "application/json", "User-Agent": "minikube-py-join",
        "Authorization": f"Bearer {token}"})
    path = f"/api/v1/namespaces/{KUBE_SYSTEM}/configmaps/{KUBE_PROXY_CONFIG_MAP}"
    try:
        for attempt in range(3):
            try:
                answer = await pool.request("GET", path, timeout=10.0)
                break
            except (transport.TransportError, TimeoutError) as error:
                if attempt == 2:
                    raise DiscoveryError(f"cannot read {KUBE_SYSTEM}/{KUBE_PROXY_CONFIG_MAP} "
                                         f"from {server}: {error}") from None
                await asyncio.sleep(1.0)
    finally:
        await pool.close()
    if answer.status != 200:
        return None
    config_map = orjson.loads(answer.body)
    return config_map if isinstance(config_map, dict) else None


def _status_message(body: bytes) -> str:
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        return ""
    return str(status.get("message", "")) if isinstance(status, dict) else ""


def _signed_kubeconfig(config_map: Obj, token_id: str, token_secret_half: str) -> str:
    """validateClusterInfoToken: the ConfigMap's kubeconfig, if the token signed it."""
    data = config_map.get("data") or {}
    content = data.get(bt.KUBECONFIG_KEY)
    if not content:
        raise DiscoveryError(f"there is no {bt.KUBECONFIG_KEY} key in the {bt.CLUSTER_INFO}"
                             " ConfigMap: this API server isn't set up for token "
                             "bootstrapping")
    signature = data.get(bt.JWS_PREFIX + token_id) or ""
    if not bt.signature_is_valid(signature, content, token_id, token_secret_half):
        raise DiscoveryError("failed to verify JWS signature of received cluster info "
                             "object, can't trust this API Server")
    return str(content)


def _cluster_of(content: str) -> tuple[str, bytes]:
    """The server and CA (PEM) of the kubeconfig's cluster."""
    try:
        document = yaml.safe_load(content)
        cluster = document["clusters"][0]["cluster"]
        return str(cluster["server"]), base64.b64decode(
            cluster["certificate-authority-data"], validate=True)
    except (yaml.YAMLError, KeyError, IndexError, TypeError, ValueError) as error:
        raise DiscoveryError(f"malformed kubeconfig in the {bt.CLUSTER_INFO} ConfigMap: "
                             f"{error!r}") from None


def _check_pinned(ca_pem: bytes, pins: set[str]) -> None:
    """validateClusterCA: one of the CA certificates' public keys is pinned."""
    try:
        certificates = x509.load_pem_x509_certificates(ca_pem)
    except ValueError as error:
        raise DiscoveryError(f"failed to parse cluster CA from the {bt.CLUSTER_INFO} "
                             f"ConfigMap: {error}") from None
    found = [hashlib.sha256(_public_key_info(cert)).hexdigest() for cert in certificates]
    if not pins & set(found):
        shown = ":".join(f"sha256:{digest}" for digest in found)
        raise DiscoveryError(f"cluster CA found in {bt.CLUSTER_INFO} ConfigMap is invalid: "
                             f'none of the public keys "{shown}" are pinned')
