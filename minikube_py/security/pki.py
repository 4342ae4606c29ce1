"""The cluster's certificates, as kubeadm makes them (`kubeadm init phase certs`).

    a CA                       ca.crt / ca.key: signs everything below; every component
                               trusts it (kubeconfig's certificate-authority-data,
                               the API server's --client-ca-file)
    a serving certificate      apiserver.crt: the names and addresses clients dial (SANs:
                               kubernetes, kubernetes.default.svc..., 10.96.0.1, the host)
    client certificates        one per identity: the subject's CN is the user name, each
                               O a group (admin: CN=kubernetes-admin, O=system:masters;
                               the scheduler: CN=system:kube-scheduler)

Keys are ECDSA P-256 (fast to make, small, what `kubeadm` offers as an option); a
certificate is valid for a year, the CA for ten, as kubeadm's defaults.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CERT_VALIDITY = datetime.timedelta(days=365)
CA_VALIDITY = datetime.timedelta(days=3650)
# Tolerate clocks a little apart, as kubeadm back-dates its certificates.
BACKDATE = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, in memory."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())

    def write(self, directory: Path, name: str) -> tuple[Path, Path]:
        """<name>.crt and <name>.key in `directory` (the key readable by its owner only)."""
        directory.mkdir(parents=True, exist_ok=True)
        cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
        cert_path.write_bytes(self.cert_pem)
        key_path.touch(mode=0o600)
        key_path.write_bytes(self.key_pem)
        return cert_path, key_path

    @classmethod
    def read(cls, directory: Path, name: str) -> KeyPair:
        return cls.read_files(directory / f"{name}.crt", directory / f"{name}.key")

    @classmethod
    def read_files(cls, cert_file: Path, key_file: Path) -> KeyPair:
        """A certificate and its key from PEM files (both may be one file)."""
        cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{key_file} is not an ECDSA key")
        return cls(cert, key)


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    return x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o)
                        for o in organizations),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def new_ca(common_name: str = "kubernetes") -> KeyPair:
    """A self-signed CA (kubeadm names it "kubernetes")."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder()
            .subject_name(_name(common_name)).issuer_name(_name(common_name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE).not_valid_after(now + CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=True, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256()))
    return KeyPair(cert, key)


def issue(ca: KeyPair, common_name: str, *, organizations: tuple[str, ...] = (),
          dns_names: tuple[str, ...] = (), ip_addresses: tuple[str, ...] = (),
          server: bool = False, client: bool = False) -> KeyPair:
    """A certificate signed by `ca`: for serving (with its names and addresses as SANs),
    for a client (CN the user, O the groups), or both."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    usages = [*([ExtendedKeyUsageOID.SERVER_AUTH] if server else []),
              *([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])]
    builder = (x509.CertificateBuilder()
               .subject_name(_name(common_name, organizations))
               .issuer_name(ca.cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - BACKDATE).not_valid_after(now + CERT_VALIDITY)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(
                   digital_signature=True, key_encipherment=True, key_cert_sign=False,
                   crl_sign=False, content_commitment=False, data_encipherment=False,
                   key_agreement=False, encipher_only=False, decipher_only=False),
                   critical=True)
               .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                   ca.key.public_key()), critical=False))
    names: list[x509.GeneralName] = [
        *(x509.DNSName(name) for name in dns_names),
        *(x509.IPAddress(ipaddress.ip_address(address)) for address in ip_addresses)]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return KeyPair(builder.sign(ca.key, hashes.SHA256()), key)


def apiserver_names(cluster_domain: str = "cluster.local") -> tuple[str, ...]:
    """The DNS names of the API server's serving certificate, as kubeadm lists them."""
    return ("kubernetes", "kubernetes.default", "kubernetes.default.svc",
            f"kubernetes.default.svc.{cluster_domain}", "localhost")


def subject_of(cert: x509.Certificate) -> tuple[str, tuple[str, ...]]:
    """(CN, the Os): the user and groups a client certificate names."""
    subject = cert.subject
    common = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return (str(common[0].value) if common else "",
            tuple(str(a.value) for a in subject.get_attributes_for_oid(
                NameOID.ORGANIZATION_NAME)))


def peer_subject(peer: dict[str, Any] | None) -> tuple[str, tuple[str, ...]] | None:
    """(CN, Os) of the client certificate TLS verified, or None without one."""
    if not peer:
        return None
    common_name, organizations = "", []
    for rdn in peer.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                common_name = value
            elif key == "organizationName":
                organizations.append(value)
    return (common_name, tuple(organizations)) if common_name else None


def server_ssl_context(cert_file: Path, key_file: Path, client_ca_file: Path | None
                       ) -> ssl.SSLContext:
    """TLS for a server: its certificate, and client certificates optional but checked
    against the client CA when given (a certificate from another CA fails the handshake)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    if client_ca_file is not None:
        context.load_verify_locations(cafile=client_ca_file)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context
