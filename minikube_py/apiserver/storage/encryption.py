"""Encryption at rest: what etcd holds for Secrets is ciphertext (upstream
k8s.io/apiserver/pkg/storage/value and its encryptionconfig).

--encryption-provider-config names an EncryptionConfiguration:

    apiVersion: apiserver.config.k8s.io/v1
    kind: EncryptionConfiguration
    resources:
      - resources: [secrets]
        providers:                      # the first one writes; every one may read
          - aesgcm:
              keys:
                - name: key2            # the first key encrypts
                  secret: <32 bytes, base64>
                - name: key1            # the others still decrypt
                  secret: <...>
          - identity: {}                # plain JSON, as written before encryption

An encrypted value says how to read it back:

    aesgcm   k8s:enc:aesgcm:v1:<key name>:<12-byte nonce><ciphertext and tag>
             (the etcd key is authenticated data: a value moved to another key fails)
    aescbc   k8s:enc:aescbc:v1:<key name>:<16-byte IV><ciphertext, PKCS#7 padded>

Rotating a key: put the new key first (the old one second) and restart the API servers,
then rewrite every Secret (`kubectl get secrets -A -o json | kubectl replace -f -`), then
drop the old key. The API reads and writes plaintext throughout; only etcd sees the rest.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from minikube_py.apiserver.storage.etcd import EtcdError

ENCRYPTED = b"k8s:enc:"


class TransformError(EtcdError):
    """A stored value cannot be read back: no provider knows its prefix or key, or it
    does not decrypt. A read of it fails (500); the resource's watch cache logs the key
    and retries, so the API server is not ready until the configuration can read every
    value again: drop a key only once nothing it wrote is left."""


class Provider(Protocol):
    def prefix(self) -> bytes:
        """What the values this provider writes start with (b"" for identity)."""
        ...

    def encrypt(self, data: bytes, key: bytes) -> bytes: ...

    def decrypt(self, stored: bytes, key: bytes) -> bytes | None:
        """The plaintext, or None when the value is not this provider's."""
        ...


class Identity:
    def prefix(self) -> bytes:
        return b""

    def encrypt(self, data: bytes, key: bytes) -> bytes:
        return data

    def decrypt(self, stored: bytes, key: bytes) -> bytes | None:
        return None if stored.startswith(ENCRYPTED) else stored


@dataclass(frozen=True)
class _Key:
    name: str
    secret: bytes


class AESGCMProvider:
    def __init__(self, keys: list[_Key]) -> None:
        self.keys = keys

    def prefix(self) -> bytes:
        return f"k8s:enc:aesgcm:v1:{self.keys[0].name}:".encode()

    def encrypt(self, data: bytes, key: bytes) -> bytes:
        nonce = os.urandom(12)
        return self.prefix() + nonce + AESGCM(self.keys[0].secret).encrypt(nonce, data, key)

    def decrypt(self, stored: bytes, key: bytes) -> bytes | None:
        for candidate in self.keys:
            prefix = f"k8s:enc:aesgcm:v1:{candidate.name}:".encode()
            if stored.startswith(prefix):
                body = stored[len(prefix):]
                try:
                    return AESGCM(candidate.secret).decrypt(body[:12], body[12:], key)
                except Exception as err:  # noqa: BLE001 - cryptography's InvalidTag
                    raise TransformError(f"{key.decode()}: cannot decrypt with key "
                                         f"{candidate.name!r}: {type(err).__name__}") from None
        return None


class AESCBCProvider:
    def __init__(self, keys: list[_Key]) -> None:
        self.keys = keys

    def prefix(self) -> bytes:
        return f"k8s:enc:aescbc:v1:{self.keys[0].name}:".encode()

    def encrypt(self, data: bytes, key: bytes) -> bytes:
        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()
        padded = padder.update(data) + padder.finalize()
        encryptor = Cipher(algorithms.AES(self.keys[0].secret), modes.CBC(iv)).encryptor()
        return self.prefix() + iv + encryptor.update(padded) + encryptor.finalize()

    def decrypt(self, stored: bytes, key: bytes) -> bytes | None:
        for candidate in self.keys:
            prefix = f"k8s:enc:aescbc:v1:{candidate.name}:".encode()
            if stored.startswith(prefix):
                body = stored[len(prefix):]
                decryptor = Cipher(algorithms.AES(candidate.secret),
                                   modes.CBC(body[:16])).decryptor()
                try:
                    padded = decryptor.update(body[16:]) + decryptor.finalize()
                    unpadder = padding.PKCS7(128).unpadder()
                    return unpadder.update(padded) + unpadder.finalize()
                except ValueError:
                    raise TransformError(f"{key.decode()}: cannot decrypt with key "
                                         f"{candidate.name!r}") from None
        return None


class ValueTransformer:
    """For each encrypted resource's etcd prefix, its providers; values under other keys
    pass as they are."""

    def __init__(self, providers: dict[bytes, list[Provider]]) -> None:
        self.providers = providers

    def _for(self, key: bytes) -> list[Provider] | None:
        return next((providers for prefix, providers in self.providers.items()
                     if key.startswith(prefix)), None)

    def to_storage(self, key: bytes, value: bytes) -> bytes:
        providers = self._for(key)
        return value if providers is None else providers[0].encrypt(value, key)

    def from_storage(self, key: bytes, value: bytes) -> bytes:
        providers = self._for(key)
        if providers is None or not value:
            return value
        for provider in providers:
            plain = provider.decrypt(value, key)
            if plain is not None:
                return plain
        raise TransformError(f"{key.decode()}: no provider of the encryption configuration "
                             f"can read a value starting {value[:24]!r}")


def load_encryption_config(path: Path) -> ValueTransformer:
    """Read an EncryptionConfiguration; ValueError with the reason when it is wrong."""
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"cannot read {path}: {err}") from None
    if not isinstance(document, dict) or document.get("kind") != "EncryptionConfiguration":
        raise ValueError(f"{path}: not an EncryptionConfiguration")
    transformers: dict[bytes, list[Provider]] = {}
    for i, entry in enumerate(document.get("resources") or []):
        providers = [_provider(p, f"resources[{i}].providers[{j}]")
                     for j, p in enumerate(entry.get("providers") or [])]
        if not providers:
            raise ValueError(f"{path}: resources[{i}] has no providers")
        for resource in entry.get("resources") or []:
            plural, _, group = str(resource).partition(".")
            if group and group not in ("", "core"):
                raise ValueError(f"{path}: only core resources can be encrypted here, "
                                 f"not {resource!r}")
            transformers[f"/registry/{plural}/".encode()] = providers
    return ValueTransformer(transformers)


def _provider(spec: Any, where: str) -> Provider:
    if not isinstance(spec, dict) or len(spec) != 1:
        raise ValueError(f"{where}: exactly one provider per entry")
    (kind, settings), = spec.items()
    if kind == "identity":
        return Identity()
    if kind not in ("aesgcm", "aescbc"):
        raise ValueError(f"{where}: provider {kind!r} is not supported (identity, aesgcm, "
                         "aescbc)")
    keys = []
    for key in (settings or {}).get("keys") or []:
        try:
            secret = base64.b64decode(str(key.get("secret", "")), validate=True)
        except ValueError:
            raise ValueError(f"{where}: key {key.get('name')!r} is not base64") from None
        if len(secret) not in (16, 24, 32):
            raise ValueError(f"{where}: key {key.get('name')!r} must be 16, 24 or 32 bytes, "
                             f"not {len(secret)}")
        keys.append(_Key(str(key.get("name", "")), secret))
    if not keys:
        raise ValueError(f"{where}: {kind} needs at least one key")
    return AESGCMProvider(keys) if kind == "aesgcm" else AESCBCProvider(keys)
