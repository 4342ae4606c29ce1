"""The kubelet's client certificate: TLS bootstrap, then rotation before it expires
(upstream: pkg/kubelet/certificate/bootstrap and client-go's util/certificate).

    kubelet start
      --kubeconfig exists, and its certificate is still good?           -> use it
      <cert-dir>/kubelet-client-current.pem still good?                 -> write --kubeconfig
      else, as the --bootstrap-kubeconfig's user (a bootstrap token):
        a new ECDSA key and a CSR: CN system:node:<node>, O system:nodes,
        signer kubernetes.io/kube-apiserver-client-kubelet, named node-csr-<digest>
        -> wait until status.certificate is set (csrapproving approves it after a
           SubjectAccessReview on certificatesigningrequests/nodeclient; csrsigning signs)
        -> <cert-dir>/kubelet-client-<time>.pem (certificate, then key), and the symlink
           kubelet-client-current.pem pointing at it
        -> --kubeconfig: the bootstrap kubeconfig's server and CA, and that file as
           client-certificate and client-key
    kubelet running (--rotate-certificates)
      at 70-90% of the certificate's life (a random point, so that nodes do not all ask
      at once): a new key and CSR (generateName csr-), asked for as the node itself
      (approved through .../selfnodeclient), written as above; the API client loads it
      for its next connections

The node needs nothing but a bootstrap token and the CA to join: its identity comes from
the cluster, and is renewed by the cluster.

    its serving certificate (--rotate-server-certificates, upstream's serverTLSBootstrap)
      <cert-dir>/kubelet-server-current.pem still good?                  -> serve with it
      else, as the node: a CSR for signer kubernetes.io/kubelet-serving, CN
      system:node:<node>, O system:nodes, its name and address as subjectAltNames
        -> wait until it is issued: no controller of the cluster approves these (a
           node may not vouch for its own names); the cluster's owner does, as
           `kubectl certificate approve` or `minikube-py up` (cluster/join.py)
        -> kubelet-server-<time>.pem and kubelet-server-current.pem; the API's TLS
           starts with it, and is reloaded when the certificate is renewed
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import ipaddress
import logging
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.rest import Client
from minikube_py.lifecycle import Component
from minikube_py.security import csr as csrs

log = logging.getLogger(__name__)

CURRENT = "kubelet-client-current.pem"
SERVING = "kubelet-server"  # the prefix of the serving pair's files
SERVING_USAGES = ("digital signature", "server auth")
# How long a kubelet waits for its first certificate before it gives up (upstream: 1h).
BOOTSTRAP_TIMEOUT = 3600.0
RELIST_PAUSE = 1.0
"""Seconds between a watch's ERROR and reading the CSR again (no busy loop when the
API server keeps refusing)."""


class CertificateRequestFailed(Exception):
    """The CSR was denied, failed, or never answered."""


@dataclass(frozen=True)
class ClientCertificate:
    cert: x509.Certificate
    path: Path

    def good(self, now: datetime.datetime | None = None) -> bool:
        now = now or datetime.datetime.now(datetime.UTC)
        return self.cert.not_valid_before_utc <= now < self.cert.not_valid_after_utc


def read_pair(path: Path) -> ClientCertificate | None:
    """A PEM file holding a certificate and its key, or None when it is missing or bad."""
    try:
        data = path.read_bytes()
        cert = x509.load_pem_x509_certificate(data)
        serialization.load_pem_private_key(data, password=None)
    except (OSError, ValueError):
        return None
    return ClientCertificate(cert, path)


def current(cert_dir: Path, prefix: str = "kubelet-client") -> ClientCertificate | None:
    return read_pair(cert_dir / f"{prefix}-current.pem")


def write_pair(cert_dir: Path, cert_pem: bytes, key: ec.EllipticCurvePrivateKey,
               now: datetime.datetime | None = None, prefix: str = "kubelet-client") -> Path:
    """<prefix>-<time>.pem (owner-only), then <prefix>-current.pem pointing at it, swapped
    atomically: a reader sees the old pair or the new one, never half."""
    now = now or datetime.datetime.now(datetime.UTC)
    cert_dir.mkdir(parents=True, exist_ok=True)
    target = cert_dir / f"{prefix}-{now.strftime('%Y-%m-%d-%H-%M-%S')}.pem"
    target.touch(mode=0o600)
    target.write_bytes(cert_pem + csrs.key_pem(key))
    link = cert_dir / f".{prefix}-current.pem.tmp"
    link.unlink(missing_ok=True)
    link.symlink_to(target.name)
    os.replace(link, cert_dir / f"{prefix}-current.pem")
    return cert_dir / f"{prefix}-current.pem"


def write_kubeconfig(path: Path, server: str, ca_pem: bytes, pair: Path) -> None:
    """The kubeconfig the kubelet runs with after bootstrap (upstream's shape)."""
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": "default-cluster", "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "contexts": [{"name": "default-context", "context": {
            "cluster": "default-cluster", "namespace": "default", "user": "default-auth"}}],
        "current-context": "default-context",
        "users": [{"name": "default-auth", "user": {
            "client-certificate": str(pair), "client-key": str(pair)}}],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(yaml.safe_dump(config, sort_keys=False))
    os.replace(temporary, path)


def kubeconfig_certificate(path: Path) -> ClientCertificate | None:
    """The client certificate a kubeconfig names, with its key, in files or inline
    (`client-certificate-data`, as kubeadm init's kubelet.conf has it); None when there
    is none or it cannot be read."""
    try:
        config = load_kubeconfig(path)
    except Exception:  # noqa: BLE001 - any unreadable kubeconfig means: bootstrap again
        return None
    if not config.cert_file:
        return None
    try:
        cert = x509.load_pem_x509_certificate(Path(config.cert_file).read_bytes())
        serialization.load_pem_private_key(
            Path(config.key_file or config.cert_file).read_bytes(), password=None)
    except (OSError, ValueError):
        return None
    return ClientCertificate(cert, Path(config.cert_file))


def digested_name(key: ec.EllipticCurvePrivateKey, common_name: str,
                  organizations: tuple[str, ...], usages: tuple[str, ...]) -> str:
    """node-csr-<digest of the key, subject and usages>: the same request made twice
    (a kubelet restarted while waiting) has the same name."""
    digest = hashlib.new("sha512_256")
    public = key.public_key().public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    for part in (public, common_name.encode(), *(o.encode() for o in organizations),
                 *(u.encode() for u in usages)):
        digest.update(base64.urlsafe_b64encode(part).rstrip(b"=") + b"|")
    return "node-csr-" + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


async def request_certificate(client: Client, node: str, *, name: str | None = None,
                              timeout: float = BOOTSTRAP_TIMEOUT,
                              serving: tuple[str, ...] = ()
                              ) -> tuple[bytes, ec.EllipticCurvePrivateKey]:
    """Ask the cluster for a client certificate for `node` (or, with `serving`, the node's
    addresses: a serving certificate naming them); wait for it to be issued.
    `name`: None for generateName csr- (rotation); "digest" for node-csr-<digest>."""
    identity = (f"system:node:{node}", ("system:nodes",))
    dns_names = tuple(a for a in serving if not _is_ip(a))
    key, request = csrs.new_request(*identity, dns_names=dns_names,
                                    ip_addresses=tuple(a for a in serving if _is_ip(a)))
    signer, usages = ((csrs.KUBELET_SERVING, SERVING_USAGES) if serving
                      else (csrs.KUBELET_CLIENT, csrs.KUBELET_CLIENT_USAGES))
    metadata: Obj = {"generateName": "csr-"}
    if name == "digest":
        metadata = {"name": digested_name(key, *identity, usages)}
    api = client.resource("certificatesigningrequests", "certificates.k8s.io")
    created = await api.create({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": metadata,
        "spec": {"request": base64.b64encode(request).decode(),
                 "signerName": signer, "usages": list(usages)}})
    csr_name = created["metadata"]["name"]
    log.info("waiting for %s certificate: CSR %s", "serving" if serving else "client",
             csr_name)
    try:
        async with asyncio.timeout(timeout):
            certificate = await _issued(api, created)
    except TimeoutError as error:
        raise CertificateRequestFailed(
            f"timed out waiting for CSR {csr_name} to be signed") from error
    return certificate, key


async def _issued(api: Any, csr: Obj) -> bytes:
    """Watch one CSR until its certificate is there; refuse a denial or a failure.

    As upstream's watchtools.UntilWithSync: when the watch cannot start where the last
    one ended (an ERROR event, as a 410 Expired once the API server has no events that
    old: it restarted, or many writes came since), read the CSR again and watch from its
    version. Watching again from the old version would only get the same ERROR, at once
    and forever, and miss the certificate."""
    name = csr["metadata"]["name"]
    version = csr["metadata"]["resourceVersion"]
    while True:
        if (certificate := _answer(csr)):
            return certificate
        async for kind, event in api.watch(field_selector=f"metadata.name={name}",
                                           resource_version=version, timeout_seconds=60):
            if kind == "ERROR":
                log.info("watch of CSR %s ended: %s; reading it again", name,
                         event.get("message", ""))
                await asyncio.sleep(RELIST_PAUSE)
                try:
                    csr = await api.get(name)
                except NotFound:
                    raise CertificateRequestFailed(f"CSR {name} was deleted") from None
                version = csr["metadata"]["resourceVersion"]
                break
            if kind in ("ADDED", "MODIFIED"):
                csr = event
                if (certificate := _answer(csr)):
                    return certificate
            if kind == "DELETED":
                raise CertificateRequestFailed(f"CSR {name} was deleted")
            version = (event.get("metadata") or {}).get("resourceVersion") or version


def _answer(csr: Obj) -> bytes:
    """The certificate, or b"" while pending; raise when the answer is no."""
    for condition in csrs.conditions(csr):
        if condition.get("type") in ("Denied", "Failed") and (
                condition.get("status", "True") == "True"):
            word = "denied" if condition["type"] == "Denied" else "failed"
            raise CertificateRequestFailed(
                f"certificate signing request is {word}, reason: "
                f"{condition.get('reason', '')}, message: {condition.get('message', '')}")
    if csrs.is_approved(csr):
        return csrs.certificate_of(csr)
    return b""


async def bootstrap(node: str, kubeconfig: Path, bootstrap_kubeconfig: Path,
                    cert_dir: Path) -> None:
    """TLS bootstrap (LoadClientCert): leave `kubeconfig` naming a good certificate."""
    found = kubeconfig_certificate(kubeconfig)
    if found is not None and found.good():
        log.info("client certificate in %s is still good", kubeconfig)
        return
    settings = load_kubeconfig(bootstrap_kubeconfig)
    ca_pem = Path(settings.ca_file).read_bytes() if settings.ca_file else b""
    pair = current(cert_dir)
    if pair is None or not pair.good():
        log.info("no good client certificate: bootstrapping with %s", bootstrap_kubeconfig)
        async with Client(settings, user_agent="kubelet-bootstrap") as client:
            cert_pem, key = await request_certificate(client, node, name="digest")
        write_pair(cert_dir, cert_pem, key)
    write_kubeconfig(kubeconfig, settings.server, ca_pem, cert_dir / CURRENT)


def _is_ip(address: str) -> bool:
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True


async def serving_certificate(client: Client, node: str, addresses: tuple[str, ...],
                              cert_dir: Path) -> Path:
    """The node's serving pair (--rotate-server-certificates): the one in `cert_dir` while
    it is good and names these addresses, else a new one from a kubelet-serving CSR."""
    pair = current(cert_dir, SERVING)
    if pair is not None and pair.good() and set(_names(pair.cert)) >= set(addresses):
        return pair.path
    cert_pem, key = await request_certificate(client, node, serving=addresses)
    path = write_pair(cert_dir, cert_pem, key, prefix=SERVING)
    log.info("serving certificate for %s written to %s", ", ".join(addresses), path)
    return path


def _names(cert: x509.Certificate) -> list[str]:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [*names.get_values_for_type(x509.DNSName),
            *(str(ip) for ip in names.get_values_for_type(x509.IPAddress))]


def rotation_deadline(cert: x509.Certificate, fraction: float | None = None
                      ) -> datetime.datetime:
    """When to renew: at 70% to 90% of the certificate's life (client-go's jitter)."""
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    share = fraction if fraction is not None else 0.7 + 0.2 * random.random()
    return start + (end - start) * share


class CertificateRotation(Component):
    """--rotate-certificates: renew the client certificate in `cert_dir` before it
    expires, as the node itself; `rotated` is called once the new pair is in place.
    With `serving` (the node's addresses), the serving certificate instead."""

    def __init__(self, client: Client, node: str, cert_dir: Path,
                 rotated: Callable[[], None], *,
                 fraction: Callable[[], float] | None = None,
                 serving: tuple[str, ...] = ()) -> None:
        self.client = client
        self.node = node
        self.cert_dir = cert_dir
        self.rotated = rotated
        self.fraction = fraction
        self.serving = serving
        self.prefix = SERVING if serving else "kubelet-client"

    async def run(self) -> None:
        while True:
            pair = current(self.cert_dir, self.prefix)
            if pair is None:
                log.warning("no %s certificate in %s to rotate", self.prefix, self.cert_dir)
                return
            deadline = rotation_deadline(
                pair.cert, self.fraction() if self.fraction else None)
            wait = (deadline - datetime.datetime.now(datetime.UTC)).total_seconds()
            log.info("%s certificate expires %s; rotating in %.0fs", self.prefix,
                     pair.cert.not_valid_after_utc, max(wait, 0))
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                await self.rotate()
            except Exception as error:  # noqa: BLE001 - keep the old one and try again
                log.warning("client certificate rotation failed: %s", error)
                await asyncio.sleep(30)

    async def rotate(self) -> None:
        """One rotation: a new key, a CSR as this node, the pair swapped in."""
        cert_pem, key = await request_certificate(self.client, self.node,
                                                  serving=self.serving)
        write_pair(self.cert_dir, cert_pem, key, prefix=self.prefix)
        self.rotated()
        log.info("%s certificate rotated", "serving" if self.serving else "client")
