"""Helpers several controllers share (upstream pkg/controller/controller_utils.go).

- `compute_hash`: the template hash that names a revision of a pod template, carried
  by pods in the `controller-revision-hash` (DaemonSet, StatefulSet) and
  `pod-template-hash` (Deployment) labels.
- `slow_start_batch`: create many things in batches of 1, 2, 4, ... so that a request
  that fails for all of them (a quota, a bad template) fails once, not a thousand times.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import orjson

from minikube_py.api import Obj

SLOW_START_INITIAL_BATCH_SIZE = 1

# rand.SafeEncodeString's alphabet: no vowels (no words), no 0/1/3 (no look-alikes).
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193


def _fnv32a(data: bytes, value: int = _FNV32_OFFSET) -> int:
    for byte in data:
        value = ((value ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return value


def safe_encode_string(text: str) -> str:
    """rand.SafeEncodeString: each character mapped into a DNS-safe alphabet."""
    return "".join(_SAFE_ALPHABET[ord(char) % len(_SAFE_ALPHABET)] for char in text)


def compute_hash(template: Obj, collision_count: int | None) -> str:
    """ComputeHash: FNV-1a of the pod template, salted by the collision count.

    Upstream hashes the Go struct's printed form; here it is the template's JSON with
    sorted keys, so the value differs from a real cluster's but is just as stable: the
    same template (as stored, after defaulting) always gives the same hash.
    """
    value = _fnv32a(orjson.dumps(template, option=orjson.OPT_SORT_KEYS))
    if collision_count is not None:
        value = _fnv32a((collision_count & 0xFFFFFFFF).to_bytes(8, "little"), value)
    return safe_encode_string(str(value))


async def slow_start_batch(count: int, initial_batch_size: int,
                           action: Callable[[int], Awaitable[None]]) -> tuple[int, list[Exception]]:
    """slowStartBatch: run action(0..count-1) in concurrent batches of 1, 2, 4, ...

    Stops after the first batch in which any call raised. Returns how many calls
    succeeded and the errors raised; calls never attempted are `count - successes -
    len(errors)` (the caller lowers its expectations by that many).
    """
    successes = 0
    started = 0
    batch = min(count, initial_batch_size)
    while batch > 0:
        results = await asyncio.gather(*(action(i) for i in range(started, started + batch)),
                                       return_exceptions=True)
        errors = [result for result in results if isinstance(result, Exception)]
        started += batch
        successes += batch - len(errors)
        if errors:
            return successes, errors
        batch = min(2 * batch, count - started)
    return successes, []
