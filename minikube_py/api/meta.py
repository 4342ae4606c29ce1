"""Small helpers for object metadata: timestamps, names, uids, label access."""

from __future__ import annotations

import os
import random
import time
from datetime import UTC, datetime
from typing import Any

from minikube_py.api import Obj

# The alphabet upstream uses for generateName suffixes (no vowels, no confusable digits).
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAME_SUFFIX_LENGTH = 5
MAX_GENERATED_NAME_PREFIX = 63 - _NAME_SUFFIX_LENGTH


def now() -> datetime:
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """Upstream's metav1.Time wire format: second precision, UTC, `Z` suffix."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339() -> str:
    """rfc3339(now()), formatted once per second (timestamps are written very often)."""
    second = int(time.time())
    if second != _last_stamp[0]:
        _last_stamp[:] = [second, rfc3339(datetime.fromtimestamp(second, UTC))]
    return _last_stamp[1]


_last_stamp: list[Any] = [-1, ""]


def parse_rfc3339(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def new_uid() -> str:
    """A random (version 4) UUID, as uuid.uuid4() but from randomness read in bulk: one
    read of the system's random source serves 256 uids (a uid is made per object and
    per request)."""
    if len(_random_bytes) < 16:
        _random_bytes[:] = os.urandom(4096)
    raw = _random_bytes[-16:]
    del _random_bytes[-16:]
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_random_bytes = bytearray()
os.register_at_fork(after_in_child=_random_bytes.clear)  # a child must not repeat our uids


def generate_name(prefix: str) -> str:
    """generateName: the prefix (cut to leave room) plus 5 random characters."""
    suffix = "".join(random.choices(_NAME_ALPHABET, k=_NAME_SUFFIX_LENGTH))
    return prefix[:MAX_GENERATED_NAME_PREFIX] + suffix


def metadata(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def name_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def namespace_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("namespace", "")


def labels_of(obj: Obj) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}
