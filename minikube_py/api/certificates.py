"""PEM blocks, certificate signing requests and certificates, read as upstream reads them.

What the CertificateSigningRequest API accepts is decided by Go's encoding/pem and
crypto/x509; this module reads the same bytes the same way, with the messages upstream's
errors carry:

    decode_base64(text)       a `[]byte` field of the JSON (spec.request,
                              status.certificate): standard base64, as encoding/json
    decode_pem(data)          pem.Decode: the first well-formed PEM block, and the rest
    parse_csr(pem)            certificates.ParseCSR: the first block must be a
                              CERTIFICATE REQUEST whose DER parses; check_signature then
                              proves the requester holds the key (CheckSignature)
    certificate_error(pem)    validateCertificate: status.certificate holds one or more
                              CERTIFICATE blocks, without headers, each of DER
                              certificates
    organizations(csr)        the subject's O values: the groups a client certificate
                              issued for it would put its user in

Go's asn1 decoder names the tag and offset it stumbled on; a request that does not
parse gets one fixed message here instead (MALFORMED_REQUEST).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

CERTIFICATE_REQUEST = "CERTIFICATE REQUEST"
CERTIFICATE = "CERTIFICATE"
MALFORMED_REQUEST = "x509: malformed certificate request"
MALFORMED_CERTIFICATE = "x509: malformed certificate"
UNSUPPORTED_ALGORITHM = "x509: cannot verify signature: algorithm unimplemented"

_PEM_START = b"\n-----BEGIN "
_PEM_END = b"\n-----END "
_PEM_END_OF_LINE = b"-----"
_BASE64 = re.compile(rb"[A-Za-z0-9+/]*={0,2}")


def decode_base64(text: str) -> bytes:
    """A `[]byte` JSON field's value; ValueError with encoding/json's message
    ("illegal base64 data at input byte 4") when it is not standard base64."""
    data = text.encode()
    cleaned = data.replace(b"\r", b"").replace(b"\n", b"")  # the decoder skips newlines
    try:
        return base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError):
        valid = _BASE64.match(cleaned)
        offset = valid.end() if valid else 0
        if offset == len(cleaned):  # all good characters: the length or padding is wrong
            offset = len(cleaned) - len(cleaned) % 4
        raise ValueError(f"illegal base64 data at input byte {offset}") from None


@dataclass(frozen=True)
class PEMBlock:
    type: str
    headers: dict[str, str] = field(default_factory=dict)
    data: bytes = b""


def decode_pem(data: bytes) -> tuple[PEMBlock | None, bytes]:
    """pem.Decode: the first PEM block of `data` and the bytes after it; (None, data) when
    there is none. Text around blocks is skipped, and so is a block that is malformed
    (its END line does not match, or its body is not base64)."""
    rest = data
    while True:
        if rest.startswith(_PEM_START[1:]):
            rest = rest[len(_PEM_START) - 1:]
        else:
            found = rest.find(_PEM_START)
            if found < 0:
                return None, data
            rest = rest[found + len(_PEM_START):]
        type_line, rest = _get_line(rest)
        if not type_line.endswith(_PEM_END_OF_LINE):
            continue
        block_type = type_line[:-len(_PEM_END_OF_LINE)]
        headers: dict[str, str] = {}
        while True:
            if not rest:
                return None, data
            line, after = _get_line(rest)
            key, colon, value = line.partition(b":")
            if not colon:
                break
            headers[key.strip().decode(errors="replace")] = value.strip().decode(
                errors="replace")
            rest = after
        if not headers and rest.startswith(_PEM_END[1:]):
            end, trailer_at = 0, len(_PEM_END) - 1
        else:
            end = rest.find(_PEM_END)
            trailer_at = end + len(_PEM_END)
        if end < 0:
            continue
        trailer = rest[trailer_at:trailer_at + len(block_type) + len(_PEM_END_OF_LINE)]
        if trailer != block_type + _PEM_END_OF_LINE:
            continue
        rest_of_end_line, _ = _get_line(rest[trailer_at + len(trailer):])
        if rest_of_end_line:
            continue
        body = re.sub(rb"[ \t\r\n]", b"", rest[:end])
        try:
            decoded = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            continue
        _, after = _get_line(rest[end + len(_PEM_END) - 1:])
        return PEMBlock(block_type.decode(errors="replace"), headers, decoded), after


def _get_line(data: bytes) -> tuple[bytes, bytes]:
    """getLine: the first line without its line ending and trailing blanks, and the rest."""
    newline = data.find(b"\n")
    if newline < 0:
        return data.rstrip(b" \t"), b""
    line = data[:newline]
    if line.endswith(b"\r"):
        line = line[:-1]
    return line.rstrip(b" \t"), data[newline + 1:]


def parse_csr(pem: bytes) -> x509.CertificateSigningRequest:
    """certificates.ParseCSR: the request in the first PEM block; ValueError with
    upstream's message when that block is not a CERTIFICATE REQUEST or does not parse."""
    block, _ = decode_pem(pem)
    if block is None or block.type != CERTIFICATE_REQUEST:
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    try:
        return x509.load_der_x509_csr(block.data)
    except ValueError:
        raise ValueError(MALFORMED_REQUEST) from None


def check_signature(csr: x509.CertificateSigningRequest) -> None:
    """CheckSignature: the request is signed by the key it asks a certificate for;
    ValueError with Go's message for that kind of key when it is not."""
    try:
        key = csr.public_key()
        valid = csr.is_signature_valid
    except (UnsupportedAlgorithm, ValueError):
        raise ValueError(UNSUPPORTED_ALGORITHM) from None
    if valid:
        return
    if isinstance(key, rsa.RSAPublicKey):
        raise ValueError("crypto/rsa: verification error")
    if isinstance(key, ec.EllipticCurvePublicKey):
        raise ValueError("x509: ECDSA verification failure")
    if isinstance(key, ed25519.Ed25519PublicKey):
        raise ValueError("x509: Ed25519 verification failure")
    raise ValueError(UNSUPPORTED_ALGORITHM)


def organizations(csr: x509.CertificateSigningRequest) -> list[str]:
    """The subject's organizations (O), in order."""
    return [str(attribute.value)
            for attribute in csr.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]


def certificate_error(pem: bytes) -> str | None:
    """validateCertificate: why `pem` is not a certificate chain status.certificate may
    hold, or None when it is (or is empty)."""
    if not pem:
        return None
    blocks = 0
    rest = pem
    while True:
        block, rest = decode_pem(rest)
        if block is None:
            break
        if block.type != CERTIFICATE:
            return f'only CERTIFICATE PEM blocks are allowed, found "{block.type}"'
        if block.headers:
            return "no PEM block headers are permitted"
        blocks += 1
        try:
            certificates = _parse_certificates(block.data)
        except ValueError as err:
            return str(err)
        if not certificates:
            return "found CERTIFICATE PEM block containing 0 certificates"
    if blocks == 0:
        return "must contain at least one CERTIFICATE PEM block"
    return None


def _parse_certificates(der: bytes) -> list[x509.Certificate]:
    """x509.ParseCertificates: the DER certificates laid end to end in `der`."""
    certificates = []
    while der:
        length = _der_length(der)
        try:
            certificates.append(x509.load_der_x509_certificate(der[:length]))
        except ValueError:
            raise ValueError(MALFORMED_CERTIFICATE) from None
        der = der[length:]
    return certificates


def _der_length(der: bytes) -> int:
    """The length of the DER element at the start of `der`, header included."""
    if len(der) < 2:
        raise ValueError(MALFORMED_CERTIFICATE)
    size = der[1]
    if size < 0x80:
        total = 2 + size
    else:
        count = size & 0x7F
        if not 0 < count <= 4 or len(der) < 2 + count:
            raise ValueError(MALFORMED_CERTIFICATE)
        total = 2 + count + int.from_bytes(der[2:2 + count], "big")
    if total > len(der):
        raise ValueError(MALFORMED_CERTIFICATE)
    return total
