"""Bootstrap tokens: what a token is and how its Secret reads (upstream
k8s.io/cluster-bootstrap: token/api, token/util, token/jws, util/secrets).

    token            "<id>.<secret>": 6 and 16 characters of [a-z0-9] (abcdef.0123456789abcdef)
    its Secret       kube-system/bootstrap-token-<id>, type bootstrap.kubernetes.io/token
                       token-id, token-secret           the two halves
                       expiration                       RFC3339; past it the token is dead
                       usage-bootstrap-authentication   "true": a bearer token for the API
                       usage-bootstrap-signing          "true": signs cluster-info
                       auth-extra-groups                more groups, system:bootstrappers:*
                       description
    as a user        system:bootstrap:<id>, in system:bootstrappers (+ the extra groups)
    as a signature   kube-public/cluster-info's jws-kubeconfig-<id>: a detached JWS of the
                     ConfigMap's `kubeconfig`, HS256 keyed with the token's secret half

Three parties read these rules: the API server's authenticator, the bootstrap signer
and token cleaner controllers, and the joining node (kubeadm's discovery). Each keeps
its own judgement; this module only says what the data means.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from datetime import datetime

import orjson

from minikube_py.api import Obj

SECRET_PREFIX = "bootstrap-token-"
SECRET_TYPE = "bootstrap.kubernetes.io/token"
TOKEN_NAMESPACE = "kube-system"

TOKEN_ID_KEY = "token-id"
TOKEN_SECRET_KEY = "token-secret"
EXPIRATION_KEY = "expiration"
DESCRIPTION_KEY = "description"
EXTRA_GROUPS_KEY = "auth-extra-groups"
USAGE_PREFIX = "usage-bootstrap-"
USAGE_SIGNING = "usage-bootstrap-signing"
USAGE_AUTHENTICATION = "usage-bootstrap-authentication"
KNOWN_USAGES = ("signing", "authentication")

CLUSTER_INFO = "cluster-info"
CLUSTER_INFO_NAMESPACE = "kube-public"
KUBECONFIG_KEY = "kubeconfig"
JWS_PREFIX = "jws-kubeconfig-"

USER_PREFIX = "system:bootstrap:"
DEFAULT_GROUP = "system:bootstrappers"

TOKEN_PATTERN = re.compile(r"([a-z0-9]{6})\.([a-z0-9]{16})")
GROUP_PATTERN = re.compile(r"system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]")
SECRET_NAME_PATTERN = re.compile(re.escape(SECRET_PREFIX) + r"([a-z0-9]{6})")


def parse_token(token: str) -> tuple[str, str]:
    """(id, secret) of a well-formed token; ValueError for anything else."""
    match = TOKEN_PATTERN.fullmatch(token)
    if match is None:
        raise ValueError(f"the bootstrap token is not of the form {TOKEN_PATTERN.pattern!r}")
    return match[1], match[2]


def secret_name(token_id: str) -> str:
    return SECRET_PREFIX + token_id


def token_id_of_secret_name(name: str) -> str | None:
    """The id a Secret's name carries (bootstrap-token-<id>), None if it is not one."""
    match = SECRET_NAME_PATTERN.fullmatch(name)
    return match[1] if match else None


def is_token_secret(secret: Obj) -> bool:
    """A Secret the bootstrap controllers look at: of the token type, in kube-system."""
    return (secret.get("type") == SECRET_TYPE
            and secret["metadata"].get("namespace") == TOKEN_NAMESPACE)


def secret_value(secret: Obj, key: str) -> str:
    """One data value, decoded ("" when missing or not base64, as GetData)."""
    value = (secret.get("data") or {}).get(key)
    if not isinstance(value, str):
        return ""
    try:
        return base64.b64decode(value, validate=True).decode(errors="replace")
    except (binascii.Error, ValueError):
        return ""


def parse_expiration(text: str) -> datetime | None:
    """An RFC3339 time with its offset; None if it is not one."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if "T" in text.upper() and moment.tzinfo is not None else None


def time_to_expiry(secret: Obj, now: datetime) -> tuple[float, bool]:
    """GetExpiration: (seconds left, expired). No expiration: (0, False), it never
    expires; an expiration that does not parse counts as expired."""
    text = secret_value(secret, EXPIRATION_KEY)
    if not text:
        return 0.0, False
    expires = parse_expiration(text)
    if expires is None:
        return 0.0, True
    remaining = (expires - now).total_seconds()
    return (0.0, True) if remaining <= 0 else (remaining, False)


def validate_group(group: str) -> None:
    if GROUP_PATTERN.fullmatch(group) is None:
        raise ValueError(f"bootstrap group {group!r} is invalid (must match "
                         f"{GROUP_PATTERN.pattern})")


def token_groups(secret: Obj) -> list[str]:
    """GetGroups: system:bootstrappers and the auth-extra-groups, sorted, once each;
    ValueError when an extra group is not a system:bootstrappers:* name."""
    groups = {DEFAULT_GROUP}
    extra = secret_value(secret, EXTRA_GROUPS_KEY)
    if extra:
        for group in extra.split(","):
            validate_group(group)
            groups.add(group)
    return sorted(groups)


def signing_token(secret: Obj, now: datetime) -> tuple[str, str] | None:
    """validateSecretForSigning: (id, secret) of a token that may sign cluster-info: its
    name matches its token-id, it has a secret half, has not expired and is marked
    usage-bootstrap-signing=true. None otherwise."""
    name_id = token_id_of_secret_name(secret["metadata"].get("name", ""))
    token_id = secret_value(secret, TOKEN_ID_KEY)
    token_secret = secret_value(secret, TOKEN_SECRET_KEY)
    if name_id is None or not token_id or token_id != name_id or not token_secret:
        return None
    if time_to_expiry(secret, now)[1] or secret_value(secret, USAGE_SIGNING) != "true":
        return None
    return token_id, token_secret


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def detached_signature(content: str, token_id: str, token_secret: str) -> str:
    """ComputeDetachedSignature: the compact JWS of `content` (RFC 7515 appendix F) with
    the payload left out, `<header>..<signature>`; the header is
    {"alg":"HS256","kid":"<token id>"} and the HMAC-SHA256 key the token's secret half.

    (Upstream pads the key with zeros to 32 bytes for its JOSE library; HMAC pads short
    keys with zeros anyway, so the signature is the same.)"""
    header = _b64url(orjson.dumps({"alg": "HS256", "kid": token_id}))
    signed = f"{header}.{_b64url(content.encode())}".encode()
    signature = hmac.new(token_secret.encode(), signed, hashlib.sha256).digest()
    return f"{header}..{_b64url(signature)}"


def signature_is_valid(signature: str, content: str, token_id: str, token_secret: str
                       ) -> bool:
    """DetachedTokenIsValid: `signature` is the one this token makes of `content`."""
    return hmac.compare_digest(signature.encode(),
                               detached_signature(content, token_id, token_secret).encode())
