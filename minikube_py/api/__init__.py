"""API types and rules every component shares: object helpers, the kinds table, defaulting,
validation, selectors and patches."""

from typing import Any

Obj = dict[str, Any]
"""A Kubernetes object, or any part of one, as its JSON decodes: objects are JSON dicts end
to end (on the wire, in etcd, in the informers' caches)."""
