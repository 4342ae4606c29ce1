"""What the certificate signer checks and what it signs (upstream's helpers.go and
PermissiveSigningPolicy), and the kubelet's side: names, rotation deadline, cleanup rules."""

from __future__ import annotations

import base64
import datetime
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from minikube_py.controllers.certificates.cleaner import why_clean
from minikube_py.kubelet.certificate import (
    digested_name,
    kubeconfig_certificate,
    rotation_deadline,
    write_kubeconfig,
)
from minikube_py.security import csr as csrs
from minikube_py.security import pki

NOW = datetime.datetime(2026, 11, 25, 12, 0, 0, tzinfo=datetime.UTC)
CA = pki.new_ca()
KUBELET = ("system:node:n1", ("system:nodes",))


def request(common_name: str = KUBELET[0], organizations: tuple[str, ...] = KUBELET[1],
            **names: tuple[str, ...]) -> x509.CertificateSigningRequest:
    _, pem = csrs.new_request(common_name, organizations, **names)
    return csrs.parse_request(pem)


def test_a_kubelet_client_request_passes_with_or_without_key_encipherment():
    assert csrs.kubelet_client_error(request(), ["digital signature", "client auth"]) is None
    assert csrs.kubelet_client_error(
        request(), ["key encipherment", "digital signature", "client auth"]) is None


@pytest.mark.parametrize(("cn", "orgs", "names", "usages", "error"), [
    ("system:node:n1", ("system:masters",), {}, ["digital signature", "client auth"],
     "subject organization is not system:nodes"),
    ("system:node:n1", ("system:nodes", "x"), {}, ["digital signature", "client auth"],
     "subject organization is not system:nodes"),
    ("alice", ("system:nodes",), {}, ["digital signature", "client auth"],
     "subject common name does not begin with system:node:"),
    ("system:node:n1", ("system:nodes",), {"dns_names": ("n1",)},
     ["digital signature", "client auth"], "DNS subjectAltNames are not allowed"),
    ("system:node:n1", ("system:nodes",), {"ip_addresses": ("10.0.0.1",)},
     ["digital signature", "client auth"], "IP subjectAltNames are not allowed"),
    ("system:node:n1", ("system:nodes",), {}, ["client auth"],
     "usages did not match [client auth digital signature key encipherment]"),
])
def test_a_kubelet_client_request_of_another_shape_is_refused_in_upstream_words(
        cn, orgs, names, usages, error):
    assert csrs.kubelet_client_error(request(cn, orgs, **names), usages) == error


def test_a_kubelet_serving_request_needs_an_address():
    usages = ["digital signature", "server auth"]
    assert csrs.kubelet_serving_error(request(), usages) == (
        "DNS or IP subjectAltName is required")
    assert csrs.kubelet_serving_error(request(ip_addresses=("10.0.0.1",)), usages) is None


def test_an_apiserver_client_certificate_needs_client_auth_and_nothing_for_servers():
    assert csrs.apiserver_client_error(["client auth", "digital signature"]) is None
    assert csrs.apiserver_client_error(["digital signature"]) == (
        "missing required usage for client certificate: client auth")
    assert csrs.apiserver_client_error(["client auth", "server auth"]) == (
        "invalid usage for client certificate: server auth")


def test_the_signed_certificate_carries_the_subject_usages_and_names_asked_for():
    pem = csrs.sign(request(ip_addresses=("10.0.0.1",)),
                    ["digital signature", "key encipherment", "server auth", "client auth"],
                    datetime.timedelta(days=365), CA, now=NOW)
    cert = x509.load_pem_x509_certificate(pem)
    cert.verify_directly_issued_by(CA.cert)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:n1"
    assert cert.issuer == CA.cert.subject
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and usage.key_encipherment and not usage.key_cert_sign
    extended = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(extended) == [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["10.0.0.1"]


def test_a_long_certificate_is_backdated_by_its_whole_life_a_short_one_is_not():
    long = x509.load_pem_x509_certificate(
        csrs.sign(request(), ["client auth"], datetime.timedelta(days=365), CA, now=NOW))
    assert long.not_valid_before_utc == NOW - csrs.BACKDATE
    assert long.not_valid_after_utc == NOW - csrs.BACKDATE + datetime.timedelta(days=365)
    short = x509.load_pem_x509_certificate(
        csrs.sign(request(), ["client auth"], datetime.timedelta(hours=1), CA, now=NOW))
    assert short.not_valid_before_utc == NOW - csrs.BACKDATE
    assert short.not_valid_after_utc == NOW + datetime.timedelta(hours=1)


def test_no_certificate_outlives_its_ca():
    cert = x509.load_pem_x509_certificate(
        csrs.sign(request(), ["client auth"], datetime.timedelta(days=100 * 365), CA, now=NOW))
    assert cert.not_valid_after_utc == CA.cert.not_valid_after_utc


def test_a_request_whose_signature_does_not_match_is_not_signed():
    der = request().public_bytes(serialization.Encoding.DER)
    forged = x509.load_der_x509_csr(der.replace(b"system:node:n1", b"system:node:n9"))
    with pytest.raises(ValueError, match="unable to verify certificate request signature"):
        csrs.sign(forged, ["client auth"], datetime.timedelta(days=1), CA, now=NOW)


@pytest.mark.parametrize(("requested", "ttl", "expected"), [
    (None, datetime.timedelta(days=365), datetime.timedelta(days=365)),
    (3600, datetime.timedelta(days=365), datetime.timedelta(hours=1)),
    (600, datetime.timedelta(days=365), datetime.timedelta(minutes=10)),
    (60, datetime.timedelta(days=365), datetime.timedelta(minutes=10)),
    (10 ** 9, datetime.timedelta(days=365), datetime.timedelta(days=365)),
])
def test_expiration_seconds_shortens_a_certificate_never_lengthens_it(
        requested, ttl, expected):
    assert csrs.duration(requested, ttl) == expected


def test_a_request_that_is_not_pem_is_refused_in_upstream_words():
    with pytest.raises(ValueError, match="PEM block type must be CERTIFICATE REQUEST"):
        csrs.parse_request(CA.cert_pem)
    with pytest.raises(ValueError, match="PEM block type must be CERTIFICATE REQUEST"):
        csrs.request_of({"spec": {"request": "not base64!"}})


def test_the_bootstrap_request_name_depends_on_key_subject_and_usages():
    key_a, _ = csrs.new_request(*KUBELET)
    key_b, _ = csrs.new_request(*KUBELET)
    usages = csrs.KUBELET_CLIENT_USAGES
    name = digested_name(key_a, *KUBELET, usages)
    assert name.startswith("node-csr-") and name == digested_name(key_a, *KUBELET, usages)
    assert name != digested_name(key_b, *KUBELET, usages)
    assert name != digested_name(key_a, "system:node:n2", KUBELET[1], usages)


def test_rotation_comes_at_70_to_90_percent_of_the_certificate_life():
    cert = x509.load_pem_x509_certificate(
        csrs.sign(request(), ["client auth"], datetime.timedelta(days=100), CA, now=NOW))
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    assert rotation_deadline(cert, 0.7) == start + (end - start) * 0.7
    for _ in range(50):
        assert start + (end - start) * 0.7 <= rotation_deadline(cert) <= (
            start + (end - start) * 0.9)


def stamp(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def csr_object(created: datetime.datetime, conditions: list[dict[str, str]],
               certificate: bytes = b"") -> dict:
    status: dict = {"conditions": conditions}
    if certificate:
        status["certificate"] = base64.b64encode(certificate).decode()
    return {"metadata": {"name": "c", "creationTimestamp": stamp(created)}, "status": status}


def test_the_cleaner_keeps_fresh_requests_and_removes_old_answered_ones():
    hour = datetime.timedelta(hours=1)
    issued = csrs.sign(request(), ["client auth"], datetime.timedelta(days=365), CA, now=NOW)
    approved = {"type": "Approved", "status": "True", "lastUpdateTime": stamp(NOW - hour / 2)}
    assert why_clean(csr_object(NOW - hour, [approved], issued), NOW) is None
    old = {**approved, "lastUpdateTime": stamp(NOW - 2 * hour)}
    assert "approved" in why_clean(csr_object(NOW - 3 * hour, [old], issued), NOW)
    denied = {"type": "Denied", "status": "True", "lastUpdateTime": stamp(NOW - 2 * hour)}
    assert "denied" in why_clean(csr_object(NOW - 3 * hour, [denied]), NOW)
    assert why_clean(csr_object(NOW - 23 * hour, []), NOW) is None
    assert "unhandled" in why_clean(csr_object(NOW - 25 * hour, []), NOW)
    expired = csrs.sign(request(), ["client auth"], datetime.timedelta(minutes=10), CA,
                        now=NOW - 2 * hour)
    assert why_clean(csr_object(NOW - 3 * hour, [approved], expired), NOW) == (
        "the associated certificate is expired")


def test_a_kubeconfigs_client_certificate_counts_in_files_or_inline(tmp_path: Path) -> None:
    """kubeadm init's kubelet.conf embeds the certificate and key; the kubelet's own after
    a bootstrap names one file holding both: either is a certificate to keep."""
    key, pem = csrs.new_request(*KUBELET)
    now = datetime.datetime.now(datetime.UTC)
    cert_pem = csrs.sign(csrs.parse_request(pem), ["client auth"], datetime.timedelta(days=1),
                         CA, now=now)
    key_pem = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())

    def kubeconfig(name: str, user: dict[str, str]) -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": user}]}))
        return path
    inline = kubeconfig("kubelet.conf", {
        "client-certificate-data": base64.b64encode(cert_pem).decode(),
        "client-key-data": base64.b64encode(key_pem).decode()})
    pair = tmp_path / "kubelet-client-current.pem"
    pair.write_bytes(cert_pem + key_pem)
    after_bootstrap = tmp_path / "after.conf"
    write_kubeconfig(after_bootstrap, "https://10.0.0.1:6443", b"", pair)
    for path in (inline, after_bootstrap):
        found = kubeconfig_certificate(path)
        assert found is not None and found.good(), path
    # a certificate without its key, or none at all, is no certificate to keep
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    assert kubeconfig_certificate(kubeconfig("no-key.conf", {
        "client-certificate": str(tmp_path / "cert.pem")})) is None
    assert kubeconfig_certificate(kubeconfig("token.conf", {"token": "abc"})) is None
