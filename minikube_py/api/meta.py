"""Small helpers for object metadata: timestamps, names, uids, label access."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]

# The alphabet upstream uses for generateName suffixes (no vowels, no confusable digits).
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAME_SUFFIX_LENGTH = 5
MAX_GENERATED_NAME_PREFIX = 63 - _NAME_SUFFIX_LENGTH


def now() -> datetime:
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """Upstream's metav1.Time wire format: second precision, UTC, `Z` suffix."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def new_uid() -> str:
    return str(uuid.uuid4())


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
    return obj.get("metadata", {}).get("name", "")


def namespace_of(obj: Obj) -> str:
    return obj.get("metadata", {}).get("namespace", "")


def labels_of(obj: Obj) -> dict[str, str]:
    labels = obj.get("metadata", {}).get("labels")
    return labels if isinstance(labels, dict) else {}
