"""ServiceAccount tokens: JWTs the API server signs and later recognises (upstream
pkg/serviceaccount and pkg/registry/core/serviceaccount/storage/token.go).

    POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token     (kubectl create token)
      TokenRequest {spec: {audiences, expirationSeconds, boundObjectRef}}
      -> a JWT, signed with --service-account-signing-key-file (ES256):
           header   {"alg": "ES256", "kid": <key id>}
           claims   iss (--service-account-issuer), sub system:serviceaccount:<ns>:<name>,
                    aud, iat, nbf, exp, jti, and "kubernetes.io": the namespace, the
                    ServiceAccount's name and uid (and the pod's, when bound to one)
      -> status {token, expirationTimestamp}

    a request with `Authorization: Bearer <that JWT>`
      -> signature (with --service-account-key-file), issuer, audience, times
      -> the ServiceAccount (and the bound pod) still exist with the same uid
      -> user system:serviceaccount:<ns>:<name>, groups system:serviceaccounts and
         system:serviceaccounts:<ns>
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson
from aiohttp import web
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from minikube_py.api import Obj, errors
from minikube_py.api.meta import rfc3339
from minikube_py.api.validation import invalid
from minikube_py.apiserver.auth.authentication import AUTHENTICATED, UserInfo
from minikube_py.apiserver.endpoints.request_params import read_object
from minikube_py.apiserver.endpoints.responses import json_response
from minikube_py.apiserver.registry.store import Store

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
MAX_EXPIRATION = 2**32  # upstream caps at 2^32 seconds too


class TokenError(ValueError):
    """A token that is not a valid ServiceAccount token of this cluster: 401."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def key_id(public_key: ec.EllipticCurvePublicKey) -> str:
    """Upstream's kid: the SHA-256 of the public key's DER, base64url."""
    der = public_key.public_bytes(serialization.Encoding.DER,
                                  serialization.PublicFormat.SubjectPublicKeyInfo)
    return _b64(hashlib.sha256(der).digest())


def load_signing_key(pem: bytes) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("the service account signing key must be an ECDSA P-256 key")
    return key


def load_public_key(pem: bytes) -> ec.EllipticCurvePublicKey:
    """A public key, or the public half of a private key (upstream accepts both)."""
    if b"PRIVATE KEY" in pem:
        return load_signing_key(pem).public_key()
    key = serialization.load_pem_public_key(pem)
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise ValueError("the service account key must be an ECDSA P-256 key")
    return key


@dataclass(frozen=True)
class Binding:
    """What a token names: the ServiceAccount, and the pod it is bound to, if any."""

    namespace: str
    name: str
    uid: str
    pod_name: str = ""
    pod_uid: str = ""


class TokenIssuer:
    """Signs tokens (TokenRequest) and checks them (authentication)."""

    def __init__(self, signing_key: ec.EllipticCurvePrivateKey | None,
                 public_keys: list[ec.EllipticCurvePublicKey], issuer: str,
                 audiences: list[str]) -> None:
        self.signing_key = signing_key
        self.public_keys = {key_id(key): key for key in public_keys}
        self.issuer = issuer
        self.audiences = audiences or [issuer]

    def sign(self, binding: Binding, audiences: list[str], expiration: int,
             now: float | None = None) -> tuple[str, int]:
        """The JWT and when it expires (seconds since the epoch)."""
        if self.signing_key is None:
            raise TokenError("no --service-account-signing-key-file: tokens cannot be issued")
        issued = int(now if now is not None else time.time())
        claims: Obj = {
            "aud": audiences or self.audiences, "exp": issued + expiration,
            "iat": issued, "iss": self.issuer, "jti": str(uuid.uuid4()),
            "kubernetes.io": {"namespace": binding.namespace,
                              "serviceaccount": {"name": binding.name, "uid": binding.uid}},
            "nbf": issued,
            "sub": f"system:serviceaccount:{binding.namespace}:{binding.name}",
        }
        if binding.pod_name:
            claims["kubernetes.io"]["pod"] = {"name": binding.pod_name, "uid": binding.pod_uid}
        header = {"alg": "ES256", "kid": key_id(self.signing_key.public_key())}
        signed = f"{_b64(orjson.dumps(header))}.{_b64(orjson.dumps(claims))}"
        der = self.signing_key.sign(signed.encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return f"{signed}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}", (
            issued + expiration)

    def verify(self, token: str, exists: Callable[[Binding], bool],
               now: float | None = None) -> tuple[UserInfo, list[str]]:
        """The user a token names, and its audiences; TokenError when it is not ours, is
        out of date, or names a ServiceAccount (or pod) that is gone."""
        try:
            header_part, claims_part, signature_part = token.split(".")
            header = orjson.loads(_unb64(header_part))
            claims = orjson.loads(_unb64(claims_part))
            signature = _unb64(signature_part)
        except (ValueError, orjson.JSONDecodeError):
            raise TokenError("not a JWT") from None
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise TokenError("not a JWT")
        if claims.get("iss") != self.issuer:
            raise TokenError("issued by someone else")
        if header.get("alg") != "ES256" or len(signature) != 64:
            raise TokenError("not signed with ES256")
        key = self.public_keys.get(str(header.get("kid", "")))
        candidates = [key] if key is not None else list(self.public_keys.values())
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"),
                                   int.from_bytes(signature[32:], "big"))
        if not any(_verifies(k, der, f"{header_part}.{claims_part}") for k in candidates):
            raise TokenError("invalid signature")
        clock = now if now is not None else time.time()
        if not isinstance(claims.get("exp"), int) or clock >= claims["exp"]:
            raise TokenError("token has expired")
        if isinstance(claims.get("nbf"), int) and clock < claims["nbf"] - 60:
            raise TokenError("token is not valid yet")
        audiences = claims.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else list(audiences or [])
        if not set(audiences) & set(self.audiences):
            raise TokenError("token audiences are not this API server's")
        private = claims.get("kubernetes.io") or {}
        account = private.get("serviceaccount") or {}
        pod = private.get("pod") or {}
        binding = Binding(str(private.get("namespace", "")), str(account.get("name", "")),
                          str(account.get("uid", "")), str(pod.get("name", "")),
                          str(pod.get("uid", "")))
        if not binding.namespace or not binding.name or not exists(binding):
            raise TokenError("the service account (or the pod it is bound to) is gone")
        extra = {"authentication.kubernetes.io/credential-id": (f"JTI={claims.get('jti')}",)}
        if binding.pod_name:
            extra["authentication.kubernetes.io/pod-name"] = (binding.pod_name,)
            extra["authentication.kubernetes.io/pod-uid"] = (binding.pod_uid,)
        user = UserInfo(f"system:serviceaccount:{binding.namespace}:{binding.name}",
                        binding.uid, ("system:serviceaccounts",
                                      f"system:serviceaccounts:{binding.namespace}",
                                      AUTHENTICATED), extra)
        return user, audiences


def _verifies(key: ec.EllipticCurvePublicKey, der: bytes, signed: str) -> bool:
    try:
        key.verify(der, signed.encode(), ec.ECDSA(hashes.SHA256()))
        return True
    except InvalidSignature:
        return False


async def serve_token_request(request: web.Request, issuer: TokenIssuer | None,
                              accounts: Store, pods: Store, namespace: str, name: str
                              ) -> web.Response:
    """TokenREST.Create: check the request, find the ServiceAccount (and the pod it binds
    the token to), sign, answer the TokenRequest with its status (201)."""
    if issuer is None or issuer.signing_key is None:
        raise errors.APIError(404, "NotFound", "the server could not find the requested "
                              "resource", {})
    body = await read_object(request, accounts.resource, "TokenRequest",
                             "authentication.k8s.io/v1")
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    expiration = spec.get("expirationSeconds", DEFAULT_EXPIRATION)
    problems = []
    if not isinstance(expiration, int) or expiration < MIN_EXPIRATION:
        problems.append(invalid("spec.expirationSeconds", expiration,
                                "may not specify a duration less than 10 minutes"))
    elif expiration > MAX_EXPIRATION:
        problems.append(invalid("spec.expirationSeconds", expiration,
                                "may not specify a duration larger than 2^32 seconds"))
    if problems:
        raise errors.invalid("TokenRequest", "authentication.k8s.io", name, problems)
    account = await accounts.get(namespace, name)
    binding = Binding(namespace, name, account["metadata"]["uid"])
    bound = spec.get("boundObjectRef") or {}
    if bound:
        if bound.get("kind") != "Pod":
            raise errors.bad_request(f"cannot bind token to object of kind "
                                     f"{bound.get('kind')!r}: only Pod is supported here")
        pod = await pods.get(namespace, str(bound.get("name", "")))
        if bound.get("uid") and bound["uid"] != pod["metadata"]["uid"]:
            raise errors.conflict("pods", "", str(bound.get("name")),
                                  f"the UID in the bound object reference ({bound['uid']}) "
                                  f"does not match the UID in record. The object might "
                                  f"have been deleted and then recreated")
        binding = Binding(namespace, name, binding.uid, pod["metadata"]["name"],
                          pod["metadata"]["uid"])
    audiences = list(spec.get("audiences") or issuer.audiences)
    token, expires = issuer.sign(binding, audiences, expiration)
    answer = {
        "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": rfc3339(
            datetime.now(UTC))},
        "spec": {"audiences": audiences, "boundObjectRef": bound or None,
                 "expirationSeconds": expiration},
        "status": {"token": token, "expirationTimestamp": rfc3339(
            datetime.fromtimestamp(expires, UTC))},
    }
    return json_response(answer, 201)
