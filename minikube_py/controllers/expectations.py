"""Expectations: what a controller has asked for and not yet seen in its cache.

A ReplicaSet that needs 3 more pods creates 3, but its pod informer hears about them a
moment later. Syncing again before then would count 0 new pods and create 3 more. So
before acting, the controller records "I expect 3 creations"; each pod the informer
reports lowers the count; `satisfied(key)` stays False (and sync does nothing but wait)
until the count reaches zero or the record is 5 minutes old (upstream's TTL, a guard
against a lost watch event wedging the controller forever).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

EXPECTATIONS_TTL = 300.0


@dataclass
class _Expectation:
    add: int = 0
    delete: int = 0
    deleted_keys: set[str] = field(default_factory=set)
    timestamp: float = field(default_factory=time.monotonic)

    def fulfilled(self) -> bool:
        return self.add <= 0 and self.delete <= 0

    def expired(self) -> bool:
        return time.monotonic() - self.timestamp > EXPECTATIONS_TTL


class ControllerExpectations:
    """Pending creations and deletions per controller key (UIDTrackingControllerExpectations:
    deletions are tracked by pod key, so one deletion is never counted twice)."""

    def __init__(self) -> None:
        self._records: dict[str, _Expectation] = {}

    def satisfied(self, key: str) -> bool:
        """True when the cache has caught up with what the controller did (or gave up)."""
        record = self._records.get(key)
        return record is None or record.fulfilled() or record.expired()

    def expect_creations(self, key: str, count: int) -> None:
        self._records[key] = _Expectation(add=count)

    def expect_deletions(self, key: str, deleted_keys: list[str]) -> None:
        self._records[key] = _Expectation(delete=len(deleted_keys),
                                          deleted_keys=set(deleted_keys))

    def creation_observed(self, key: str) -> None:
        record = self._records.get(key)
        if record is not None:
            record.add -= 1

    def deletion_observed(self, key: str, deleted_key: str) -> None:
        record = self._records.get(key)
        if record is not None and deleted_key in record.deleted_keys:
            record.deleted_keys.discard(deleted_key)
            record.delete -= 1

    def lower_creations(self, key: str, count: int) -> None:
        """Creations that failed or were skipped will never be observed."""
        record = self._records.get(key)
        if record is not None:
            record.add -= count

    def lower_deletion(self, key: str, deleted_key: str) -> None:
        """A deletion that failed will never be observed."""
        self.deletion_observed(key, deleted_key)

    def delete(self, key: str) -> None:
        self._records.pop(key, None)
