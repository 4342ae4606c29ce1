"""Certificate signing requests: how a kubelet asks for a certificate, and how a signer
checks the request and signs it (upstream: pkg/apis/certificates/helpers.go and
pkg/controller/certificates/authority).

    the kubelet                         the API server            the controller-manager
    new key + CSR (CN system:node:n,    CertificateSigningRequest  csrapproving: approved?
    O system:nodes) --------------->    spec.request, signerName   csrsigning: sign(...) ->
    <------- status.certificate ------                             status.certificate

A signer checks that the request is of the shape its signerName promises (a kubelet's
client certificate names a node and nothing else) before it signs: the API server has
already checked that the request parses, the signer checks what it means.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
from collections.abc import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

from minikube_py.api import Obj
from minikube_py.api.certificates import parse_csr
from minikube_py.security.pki import KeyPair

KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
LEGACY_UNKNOWN = "kubernetes.io/legacy-unknown"

# What a kubelet asks for: an ECDSA key needs no "key encipherment" (upstream accepts
# both sets, with and without it).
KUBELET_CLIENT_USAGES = ("digital signature", "client auth")
_KUBELET_CLIENT_SETS = ({"digital signature", "key encipherment", "client auth"},
                        {"digital signature", "client auth"})
_KUBELET_SERVING_SETS = ({"digital signature", "key encipherment", "server auth"},
                         {"digital signature", "server auth"})

# A certificate valid for a shorter time than this is not back-dated by its full lifetime
# (upstream's PermissiveSigningPolicy: Backdate 5m, Short 8h).
BACKDATE = datetime.timedelta(minutes=5)
SHORT = datetime.timedelta(hours=8)
MIN_DURATION = datetime.timedelta(minutes=10)

# spec.usages -> the x509 KeyUsage bit (cryptography's argument name)
_KEY_USAGES = {
    "signing": "digital_signature", "digital signature": "digital_signature",
    "content commitment": "content_commitment", "key encipherment": "key_encipherment",
    "key agreement": "key_agreement", "data encipherment": "data_encipherment",
    "cert sign": "key_cert_sign", "crl sign": "crl_sign",
    "encipher only": "encipher_only", "decipher only": "decipher_only",
}
# spec.usages -> the extended key usage, in the order Go's x509 sorts them
_EXT_KEY_USAGES = {
    "any": ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE,
    "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
    "client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
    "code signing": ExtendedKeyUsageOID.CODE_SIGNING,
    "email protection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "s/mime": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "ipsec end system": ObjectIdentifier("1.3.6.1.5.5.7.3.5"),
    "ipsec tunnel": ObjectIdentifier("1.3.6.1.5.5.7.3.6"),
    "ipsec user": ObjectIdentifier("1.3.6.1.5.5.7.3.7"),
    "timestamping": ExtendedKeyUsageOID.TIME_STAMPING,
    "ocsp signing": ExtendedKeyUsageOID.OCSP_SIGNING,
    "microsoft sgc": ObjectIdentifier("1.3.6.1.4.1.311.10.3.3"),
    "netscape sgc": ObjectIdentifier("2.16.840.1.113730.4.1"),
}
_EXT_ORDER = list(dict.fromkeys(_EXT_KEY_USAGES.values()))


def parse_request(pem: str | bytes) -> x509.CertificateSigningRequest:
    """spec.request (PEM) as a CSR; ValueError in upstream's words when it is not one (the
    API server's own check, api/certificates.parse_csr)."""
    return parse_csr(pem.encode() if isinstance(pem, str) else pem)


def new_request(common_name: str, organizations: tuple[str, ...] = (), *,
                dns_names: tuple[str, ...] = (), ip_addresses: tuple[str, ...] = ()
                ) -> tuple[ec.EllipticCurvePrivateKey, bytes]:
    """A fresh ECDSA P-256 key and a CSR (PEM) for it, as a kubelet makes them."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o)
                           for o in organizations),
                         x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    builder = x509.CertificateSigningRequestBuilder().subject_name(subject)
    names: list[x509.GeneralName] = [
        *(x509.DNSName(name) for name in dns_names),
        *(x509.IPAddress(ipaddress.ip_address(address)) for address in ip_addresses)]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    request = builder.sign(key, hashes.SHA256())
    return key, request.public_bytes(serialization.Encoding.PEM)


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The key as kubelets store it ("EC PRIVATE KEY", next to the certificate)."""
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


# -- what the request says -------------------------------------------------------------------

def _organizations(request: x509.CertificateSigningRequest) -> list[str]:
    return [str(a.value) for a in request.subject.get_attributes_for_oid(
        NameOID.ORGANIZATION_NAME)]


def common_name(request: x509.CertificateSigningRequest) -> str:
    names = request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


def _alt_names(request: x509.CertificateSigningRequest) -> x509.SubjectAlternativeName | None:
    try:
        return request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None


def _count(names: x509.SubjectAlternativeName | None, kind: type[x509.GeneralName]) -> int:
    return len(names.get_values_for_type(kind)) if names is not None else 0


def kubelet_client_error(request: x509.CertificateSigningRequest,
                         usages: Iterable[str]) -> str | None:
    """Why this is not a kubelet's client certificate request (ValidateKubeletClientCSR),
    or None when it is one."""
    if _organizations(request) != ["system:nodes"]:
        return "subject organization is not system:nodes"
    names = _alt_names(request)
    for kind, message in ((x509.DNSName, "DNS subjectAltNames are not allowed"),
                          (x509.RFC822Name, "Email subjectAltNames are not allowed"),
                          (x509.IPAddress, "IP subjectAltNames are not allowed"),
                          (x509.UniformResourceIdentifier,
                           "URI subjectAltNames are not allowed")):
        if _count(names, kind):
            return message
    if not common_name(request).startswith("system:node:"):
        return "subject common name does not begin with system:node:"
    if set(usages) not in _KUBELET_CLIENT_SETS:
        return "usages did not match [client auth digital signature key encipherment]"
    return None


def kubelet_serving_error(request: x509.CertificateSigningRequest,
                          usages: Iterable[str]) -> str | None:
    """Why this is not a kubelet's serving certificate request (ValidateKubeletServingCSR)."""
    if _organizations(request) != ["system:nodes"]:
        return "subject organization is not system:nodes"
    names = _alt_names(request)
    if not _count(names, x509.DNSName) and not _count(names, x509.IPAddress):
        return "DNS or IP subjectAltName is required"
    if _count(names, x509.RFC822Name):
        return "Email subjectAltNames are not allowed"
    if _count(names, x509.UniformResourceIdentifier):
        return "URI subjectAltNames are not allowed"
    if set(usages) not in _KUBELET_SERVING_SETS:
        return "usages did not match [digital signature key encipherment server auth]"
    if not common_name(request).startswith("system:node:"):
        return "subject common name does not begin with system:node:"
    return None


def apiserver_client_error(usages: Iterable[str]) -> str | None:
    """A client certificate for the API server: client auth, and nothing but signatures
    and key encipherment beside it."""
    has_client_auth = False
    for usage in usages:
        if usage == "client auth":
            has_client_auth = True
        elif usage not in ("digital signature", "key encipherment"):
            return f"invalid usage for client certificate: {usage}"
    if not has_client_auth:
        return "missing required usage for client certificate: client auth"
    return None


def signer_error(signer_name: str, request: x509.CertificateSigningRequest,
                 usages: list[str]) -> str | None:
    """What the kube-controller-manager's signer for `signer_name` finds wrong."""
    if signer_name == KUBELET_CLIENT:
        return kubelet_client_error(request, usages)
    if signer_name == KUBELET_SERVING:
        return kubelet_serving_error(request, usages)
    if signer_name == KUBE_APISERVER_CLIENT:
        return apiserver_client_error(usages)
    return None  # legacy-unknown: no restriction


# -- conditions ----------------------------------------------------------------------------

def conditions(csr: Obj) -> list[Obj]:
    return (csr.get("status") or {}).get("conditions") or []


def has_condition(csr: Obj, kind: str) -> bool:
    """A condition of this type with status True (or no status: it defaults to True)."""
    return any(c.get("type") == kind and c.get("status", "True") == "True"
               for c in conditions(csr))


def is_approved(csr: Obj) -> bool:
    return has_condition(csr, "Approved") and not has_condition(csr, "Denied")


def approved(csr: Obj, reason: str, message: str) -> Obj:
    """The CSR with an Approved condition added: what goes to its `approval` subresource."""
    status = csr.get("status") or {}
    condition = {"type": "Approved", "status": "True", "reason": reason, "message": message}
    return {**csr, "status": {**status, "conditions": [*conditions(csr), condition]}}


def request_of(csr: Obj) -> x509.CertificateSigningRequest:
    """spec.request (base64 of the PEM, in JSON) parsed; ValueError when it does not."""
    try:
        data = base64.b64decode((csr.get("spec") or {}).get("request") or "", validate=True)
    except ValueError as error:
        raise ValueError("PEM block type must be CERTIFICATE REQUEST") from error
    return parse_request(data)


def certificate_of(csr: Obj) -> bytes:
    """status.certificate as PEM bytes ("" when not issued); JSON carries it base64."""
    data = (csr.get("status") or {}).get("certificate") or ""
    return base64.b64decode(data) if data else b""


# -- signing -------------------------------------------------------------------------------

def duration(expiration_seconds: int | None, ttl: datetime.timedelta) -> datetime.timedelta:
    """How long the certificate lasts: the signer's TTL, or spec.expirationSeconds when
    shorter (never under 10 minutes, twice the back-dating)."""
    if expiration_seconds is None:
        return ttl
    requested = datetime.timedelta(seconds=expiration_seconds)
    return min(ttl, max(requested, MIN_DURATION))


def sign(request: x509.CertificateSigningRequest, usages: list[str],
         ttl: datetime.timedelta, ca: KeyPair,
         now: datetime.datetime | None = None) -> bytes:
    """The certificate (PEM) for `request`, signed by `ca`: the request's subject and
    alternative names, the usages the CSR object asked for, and nothing else the request
    carried (upstream's PermissiveSigningPolicy). ValueError when it cannot be signed."""
    if not request.is_signature_valid:
        raise ValueError("unable to verify certificate request signature")
    unknown = [u for u in usages if u not in _KEY_USAGES and u not in _EXT_KEY_USAGES]
    if unknown:
        raise ValueError(f"unrecognized usage values: {unknown}")
    now = now or datetime.datetime.now(datetime.UTC)
    not_before = now - BACKDATE
    not_after = now + ttl if ttl < SHORT else not_before + ttl
    ca_not_after = ca.cert.not_valid_after_utc
    if not not_before < ca_not_after:
        raise ValueError("the signer has expired: NotAfter="
                         f"{ca_not_after.strftime('%Y-%m-%d %H:%M:%S +0000 UTC')}")
    not_after = min(not_after, ca_not_after)
    builder = (x509.CertificateBuilder()
               .subject_name(request.subject).issuer_name(ca.cert.subject)
               .public_key(request.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(not_before).not_valid_after(not_after)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                              critical=True))
    bits = {_KEY_USAGES[u] for u in usages if u in _KEY_USAGES}
    if bits:
        flags = {name: name in bits for name in set(_KEY_USAGES.values())}
        if not flags["key_agreement"]:
            flags["encipher_only"] = flags["decipher_only"] = False
        builder = builder.add_extension(x509.KeyUsage(**flags), critical=True)
    extended = {_EXT_KEY_USAGES[u] for u in usages if u in _EXT_KEY_USAGES}
    if extended:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([oid for oid in _EXT_ORDER if oid in extended]),
            critical=False)
    builder = builder.add_extension(
        x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
        critical=False)
    names = _alt_names(request)
    if names is not None:
        builder = builder.add_extension(names, critical=False)
    return builder.sign(ca.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
