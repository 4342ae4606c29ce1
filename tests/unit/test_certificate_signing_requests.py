"""CertificateSigningRequests are read, prepared and validated as upstream's certificates
registry and validation do, and the signer checks of admission ask what upstream asks
(the rules and corners the API tests do not reach)."""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from minikube_py.api import Obj
from minikube_py.api.certificates import (
    certificate_error,
    check_signature,
    decode_base64,
    decode_pem,
    organizations,
    parse_csr,
)
from minikube_py.api.resources import lookup
from minikube_py.api.validation import go_bytes, invalid
from minikube_py.apiserver.auth import authorization
from minikube_py.apiserver.auth.admission import UPDATE, Attributes, request_user
from minikube_py.apiserver.auth.admission.certificateapproval import CertificateApproval
from minikube_py.apiserver.auth.authentication import UserInfo
from minikube_py.apiserver.registry.strategies import strategy_for
from minikube_py.security import pki

RESOURCE = lookup("certificates.k8s.io", "v1", "certificatesigningrequests")
assert RESOURCE is not None
STRATEGY = strategy_for(RESOURCE)


def pem_request(key: Any = None, organizations: tuple[str, ...] = ()) -> bytes:
    key = key or ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o)
                           for o in organizations),
                         x509.NameAttribute(NameOID.COMMON_NAME, "alice")])
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return x509.CertificateSigningRequestBuilder().subject_name(subject).sign(
        key, algorithm).public_bytes(serialization.Encoding.PEM)


REQUEST = pem_request()
CERTIFICATE = pki.new_ca("issued").cert_pem


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def csr(conditions: list[Obj] | None = None, certificate: bytes = b"", **spec: Any) -> Obj:
    body: Obj = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                 "metadata": {"name": "req", "resourceVersion": "5"},
                 "spec": {"request": b64(REQUEST), "signerName": "example.com/signer",
                          "usages": ["client auth"], **spec}}
    status: Obj = {}
    if conditions is not None:
        status["conditions"] = conditions
    if certificate:
        status["certificate"] = b64(certificate)
    body["status"] = status
    return body


def cond(condition_type: str, status: str = "True", **fields: str) -> Obj:
    return {"type": condition_type, "status": status, **fields}


def messages(problems: list[Any]) -> list[str]:
    return [str(problem) for problem in problems]


# --- reading PEM as Go does --------------------------------------------------------------

def test_pem_decoding_skips_text_around_the_block_and_keeps_headers() -> None:
    block, rest = decode_pem(b"issued for alice\n" + REQUEST + b"trailing text\n")
    assert block is not None and block.type == "CERTIFICATE REQUEST" and not block.headers
    assert rest == b"trailing text\n"
    headed = (b"-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\n"
              + b"\n".join(CERTIFICATE.splitlines()[1:]) + b"\n")
    block, _ = decode_pem(headed)
    assert block is not None and block.headers == {"Proc-Type": "4,ENCRYPTED"}


@pytest.mark.parametrize("broken", [
    b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE-----\n",  # END differs
    b"-----BEGIN CERTIFICATE REQUEST-----\n!!!!\n-----END CERTIFICATE REQUEST-----\n",
    b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n",  # no END at all
    b"no PEM here",
])
def test_a_malformed_block_is_no_block(broken: bytes) -> None:
    assert decode_pem(broken) == (None, broken)


def test_base64_errors_name_the_offset_as_encoding_json_does() -> None:
    assert decode_base64("UEVN") == b"PEM"
    for text, offset in (("UE!N", 2), ("UEV", 0), ("UEVNU", 4)):
        with pytest.raises(ValueError, match=f"illegal base64 data at input byte {offset}$"):
            decode_base64(text)


@pytest.mark.parametrize("key", [rsa.generate_private_key(65537, 2048),
                                 ec.generate_private_key(ec.SECP384R1()),
                                 ed25519.Ed25519PrivateKey.generate()],
                         ids=["rsa", "ecdsa", "ed25519"])
def test_requests_signed_by_their_own_key_check_out(key: Any) -> None:
    check_signature(parse_csr(pem_request(key)))


@pytest.mark.parametrize(("key", "message"), [
    (rsa.generate_private_key(65537, 2048), "crypto/rsa: verification error"),
    (ec.generate_private_key(ec.SECP256R1()), "x509: ECDSA verification failure"),
    (ed25519.Ed25519PrivateKey.generate(), "x509: Ed25519 verification failure"),
], ids=["rsa", "ecdsa", "ed25519"])
def test_a_tampered_request_fails_the_signature_check_with_gos_message(
        key: Any, message: str) -> None:
    request = x509.load_pem_x509_csr(pem_request(key))
    der = bytearray(request.public_bytes(serialization.Encoding.DER))
    der[-1] ^= 0x01  # the last byte of the signature
    tampered = (b"-----BEGIN CERTIFICATE REQUEST-----\n" + base64.encodebytes(bytes(der))
                + b"-----END CERTIFICATE REQUEST-----\n")
    with pytest.raises(ValueError, match=message):
        check_signature(parse_csr(tampered))


def test_a_request_block_that_is_not_der_is_malformed() -> None:
    garbage = b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"
    with pytest.raises(ValueError, match="x509: malformed certificate request"):
        parse_csr(garbage)


def test_organizations_are_the_subjects_o_values() -> None:
    request = parse_csr(pem_request(organizations=("system:masters", "dev")))
    assert organizations(request) == ["system:masters", "dev"]


@pytest.mark.parametrize(("pem", "error"), [
    (b"", None),
    (CERTIFICATE, None),
    (CERTIFICATE + b"intermediate follows\n" + pki.new_ca("b").cert_pem, None),
    (b"just text", "must contain at least one CERTIFICATE PEM block"),
    (REQUEST, 'only CERTIFICATE PEM blocks are allowed, found "CERTIFICATE REQUEST"'),
    (b"-----BEGIN CERTIFICATE-----\nA: b\n\nAAAA\n-----END CERTIFICATE-----\n",
     "no PEM block headers are permitted"),
    (b"-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n",
     "found CERTIFICATE PEM block containing 0 certificates"),
    (b"-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----\n",
     "x509: malformed certificate"),
])
def test_a_certificate_is_certificate_blocks_of_der(pem: bytes, error: str | None) -> None:
    assert certificate_error(pem) == error


def test_go_prints_a_bad_byte_slice_byte_by_byte() -> None:
    assert str(invalid("spec.request", go_bytes(b"-\n"), "x")) == (
        "spec.request: Invalid value: []byte{0x2d, 0xa}: x")
    assert str(invalid("spec.request", go_bytes(None), "x")) == (
        "spec.request: Invalid value: []byte(nil): x")


# --- the strategy ------------------------------------------------------------------------

def test_create_takes_the_requester_from_the_request_context() -> None:
    body = csr([cond("Approved")], CERTIFICATE, username="root", groups=["system:masters"])
    token = request_user.set(UserInfo("alice", "42", ("dev", "system:authenticated"),
                                      {"scopes": ("a", "b")}))
    try:
        STRATEGY.prepare_for_create(body)
    finally:
        request_user.reset(token)
    assert body["spec"]["username"] == "alice" and body["spec"]["uid"] == "42"
    assert body["spec"]["groups"] == ["dev", "system:authenticated"]
    assert body["spec"]["extra"] == {"scopes": ["a", "b"]}
    assert "status" not in body and "generation" not in body["metadata"]


def test_approval_keeps_stored_spec_and_certificate_and_dates_new_conditions() -> None:
    old = csr([cond("Failed", "True", lastTransitionTime="2026-01-01T00:00:00Z",
                    lastUpdateTime="2026-01-01T00:00:00Z")], CERTIFICATE)
    new = csr([cond("Failed"), cond("Approved")], b"", usages=["server auth"])
    STRATEGY.prepare_for_subresource_update("approval", new, old)
    assert new["spec"] == old["spec"]
    assert new["status"]["certificate"] == old["status"]["certificate"]
    failed, approved = new["status"]["conditions"]
    assert failed["lastTransitionTime"] == "2026-01-01T00:00:00Z"  # same type and status
    assert failed["lastUpdateTime"] != "2026-01-01T00:00:00Z"  # unset in the write: now
    assert approved["lastTransitionTime"] == approved["lastUpdateTime"]


def test_status_keeps_the_stored_approval_one_for_one() -> None:
    old = csr([cond("Approved", reason="ByAdmin")])
    new = csr([cond("Approved", reason="Forged"), cond("Failed")], CERTIFICATE,
              signerName="example.com/other")
    STRATEGY.prepare_for_status_update(new, old)
    assert new["spec"]["signerName"] == "example.com/signer"
    assert new["status"]["conditions"][0]["reason"] == "ByAdmin"
    assert [c["type"] for c in new["status"]["conditions"]] == ["Approved", "Failed"]
    assert STRATEGY.validate_status_update(new, old) == []


@pytest.mark.parametrize(("conditions", "expected"), [
    ([cond("Failed", "False")],
     ['status.conditions[0].status: Unsupported value: "False": supported values: "True"']),
    ([cond("Ready", "Maybe")],
     ['status.conditions[0].status: Unsupported value: "Maybe": supported values: '
      '"False", "True", "Unknown"']),
    ([cond("Ready", "")], ["status.conditions[0].status: Required value"]),
    ([cond("", "True")], ["status.conditions[0].type: Required value"]),
    ([cond("Ready"), cond("Ready", "False")],
     ['status.conditions[1].type: Duplicate value: "Ready"']),
    ([cond("Denied"), cond("Approved")],
     ['status.conditions[1].type: Invalid value: "Approved": Approved and Denied '
      "conditions are mutually exclusive"]),
])
def test_conditions_are_validated_as_upstream_words_it(conditions: list[Obj],
                                                       expected: list[str]) -> None:
    assert messages(STRATEGY.validate(csr(conditions))) == expected


@pytest.mark.parametrize(("signer", "expected"), [
    ("example.com/signer", []),
    ("a.b.example.com/ns.name", []),
    ("Example.com/signer",
     ['spec.signerName: Invalid value: "Example.com": validating label "Example": a '
      "lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
      "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
      "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]),
    ("example.com/Signer",
     ['spec.signerName: Invalid value: "Signer": validating label "Signer": a lowercase '
      "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
      "and must start and end with an alphanumeric character (e.g. 'example.com', regex "
      "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
      "[a-z0-9])?)*')"]),
    ("example.com/a/b",
     ["spec.signerName: Invalid value: \"example.com/a/b\": must be a fully qualified "
      "domain and path of the form 'example.com/signer-name'"]),
    ("example.com/" + "a" * 564,
     ["spec.signerName: Invalid value: \"" + "a" * 564 + "\": validating label \""
      + "a" * 564 + "\": must be no more than 253 characters",
      "spec.signerName: Too long: must have at most 571 bytes"]),
])
def test_signer_names_are_a_domain_and_a_path(signer: str, expected: list[str]) -> None:
    assert messages(STRATEGY.validate(csr(signerName=signer))) == expected


def test_an_update_tolerates_what_the_stored_request_already_breaks() -> None:
    legacy = csr([cond("Approved"), cond("Denied")], signerName="kubernetes.io/legacy-unknown",
                 usages=["client auth", "client auth", "psychic"])
    legacy["metadata"]["labels"] = {"old": "yes"}
    updated = copy.deepcopy(legacy)
    updated["metadata"]["labels"] = {"old": "still"}
    STRATEGY.prepare_for_update(updated, legacy)
    assert STRATEGY.validate_update(updated, legacy) == []
    assert len(STRATEGY.validate(legacy)) == 4  # but would not be created


def test_only_status_writes_the_certificate() -> None:
    old = csr([cond("Approved")])
    new = csr([cond("Approved")], CERTIFICATE)
    assert messages(STRATEGY.validate_subresource_update("approval", new, old)) == [
        "status.certificate: Forbidden: updates may not set certificate content"]
    assert STRATEGY.validate_status_update(new, old) == []


def test_status_never_removes_failed() -> None:
    old = csr([cond("Failed")])
    new = csr([])
    assert messages(STRATEGY.validate_status_update(new, old)) == [
        'status.conditions: Forbidden: updates may not remove a condition of type "Failed"']


def test_lists_select_on_the_signer_name() -> None:
    assert STRATEGY.field_set(csr()) == {"metadata.name": "req",
                                         "spec.signerName": "example.com/signer"}


def test_any_name_will_do_that_fits_in_a_url() -> None:
    assert STRATEGY.name_validator("Not_A.DNS name") == []
    assert STRATEGY.name_validator("a/b") == ["may not contain '/'"]


# --- who may approve ---------------------------------------------------------------------

@dataclass
class Signers:
    """An authorizer that allows the `approve` verb on these signers only, and records
    what it was asked."""

    allowed: set[str]
    asked: list[str] = field(default_factory=list)

    def authorize(self, attributes: authorization.Attributes) -> authorization.Decision:
        self.asked.append(f"{attributes.verb} {attributes.api_group}/{attributes.resource}"
                          f"/{attributes.name}")
        return authorization.Decision(attributes.name in self.allowed
                                      and attributes.verb == "approve")

    def rules_for(self, user: UserInfo, namespace: str) -> list[authorization.Rule]:
        return []


def approval(old: Obj) -> Attributes:
    return Attributes(RESOURCE, "approval", UPDATE, "", "req", csr([cond("Approved")]), old,
                      UserInfo("bob"))


async def test_approval_asks_for_the_signer_then_for_its_domain() -> None:
    signers = Signers({"example.com/*"})
    await CertificateApproval(signers).validate(approval(csr()))
    assert signers.asked == ["approve certificates.k8s.io/signers/example.com/signer",
                             "approve certificates.k8s.io/signers/example.com/*"]


async def test_approval_reads_the_signer_of_the_stored_request() -> None:
    plugin = CertificateApproval(Signers({"example.com/signer"}))
    with pytest.raises(Exception, match='signerName "other.io/signer"') as refused:
        await plugin.validate(approval(csr(signerName="other.io/signer")))
    assert getattr(refused.value, "code", None) == 403


async def test_under_always_allow_anyone_approves() -> None:
    await CertificateApproval(authorization.AlwaysAllow()).validate(approval(csr()))
