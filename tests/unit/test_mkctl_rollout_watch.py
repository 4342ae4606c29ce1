"""mkctl rollout status follows a workload with a watch on its name (rollout.py
`_next_version`). When the server cannot resume that watch from the version mkctl last
saw (one ERROR event, 410 Expired, as after an API server restart), mkctl reads the
object again, as kubectl's UntilWithSync lists again, instead of watching again from the
same version, which gets the same ERROR at once, forever."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from minikube_py.api import Obj
from minikube_py.mkctl.commands import rollout

EXPIRED = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                       "message": "too old resource version: 5 (40)"}}


class Server:
    """The two calls `_next_version` makes: a watch replaying its script once, a GET."""

    def __init__(self, events: list[Obj], now: Obj) -> None:
        self.events = events
        self.now = now
        self.watches: list[dict[str, str]] = []
        self.got: list[str] = []

    def watch(self, path: str, params: dict[str, str]) -> Iterator[Obj]:
        self.watches.append(params)
        if len(self.watches) > 5:
            raise AssertionError(f"watched again and again: {self.watches}")
        yield from self.events

    def get_json(self, path: str) -> Any:
        self.got.append(path)
        return self.now


def workload() -> Any:
    resource = SimpleNamespace(group_version="apps/v1", kind="Deployment",
                               path=lambda namespace, name="": (
                                   f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"))
    return SimpleNamespace(resource=resource, namespace="default", name="web")


def deployment(version: str, ready: int) -> Obj:
    return {"metadata": {"name": "web", "resourceVersion": version},
            "status": {"readyReplicas": ready}}


def test_an_expired_watch_gives_the_object_as_read_now() -> None:
    server = Server([EXPIRED], now=deployment("40", ready=3))
    inv = SimpleNamespace(client=server)
    current = {"apiVersion": "apps/v1", "kind": "Deployment", **deployment("5", ready=1)}
    following = rollout._next_version(inv, workload(), current, None)
    assert following == {"apiVersion": "apps/v1", "kind": "Deployment",
                         **deployment("40", ready=3)}
    assert [w["resourceVersion"] for w in server.watches] == ["5"]
    assert server.got == ["/apis/apps/v1/namespaces/default/deployments/web"]


def test_a_modified_event_is_the_next_version_and_nothing_is_read() -> None:
    changed = deployment("6", ready=2)
    server = Server([{"type": "MODIFIED", "object": changed}], now=deployment("40", 3))
    inv = SimpleNamespace(client=server)
    following = rollout._next_version(inv, workload(), deployment("5", ready=1), None)
    assert following == changed and server.got == []
