"""The REST client's retry rules, the reflector's event handling and the retries of
client/retry.py, against a small loopback HTTP server that answers what each test
scripts."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest
from aiohttp import web

from minikube_py.client.errors import (
    Conflict,
    NotFound,
    ServiceUnavailable,
    TooManyRequests,
    status_error,
)
from minikube_py.client.kubeconfig import ClientConfig
from minikube_py.client.reflector import Reflector, WatchExpired
from minikube_py.client.rest import Client, ConnectionFailed
from minikube_py.client.retry import Backoff, on_error, unavailable
from minikube_py.process import free_port

Script = list[tuple[int, dict]]


def status(code: int, reason: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": reason}


class ScriptedServer:
    """Answers requests with the scripted (code, body) pairs in order, then 200s."""

    def __init__(self) -> None:
        self.script: Script = []
        self.seen: list[str] = []
        self.watch_lines: list[dict] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(request.method)
        if request.query.get("watch"):
            response = web.StreamResponse()
            await response.prepare(request)
            for line in self.watch_lines:
                await response.write(orjson.dumps(line) + b"\n")
            return response
        code, body = self.script.pop(0) if self.script else (200, {
            "kind": "ConfigMapList", "metadata": {"resourceVersion": "7"}, "items": []})
        headers = {"Retry-After": "0"} if code == 429 else {}
        return web.json_response(body, status=code, headers=headers)


@pytest.fixture
async def scripted() -> AsyncIterator[tuple[ScriptedServer, Client]]:
    server = ScriptedServer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    async with Client(ClientConfig(server=f"http://127.0.0.1:{port}"), max_retries=3) as client:
        yield server, client
    await runner.cleanup()


async def test_reads_are_retried_on_429_and_5xx(scripted: tuple[ScriptedServer, Client]
                                                ) -> None:
    server, client = scripted
    server.script = [(503, status(503, "ServiceUnavailable")),
                     (429, status(429, "TooManyRequests")), (500, status(500, "InternalError"))]
    listed = await client.resource("configmaps").list("default")
    assert listed["metadata"]["resourceVersion"] == "7"
    assert server.seen == ["GET"] * 4


async def test_reads_give_up_after_max_retries(scripted: tuple[ScriptedServer, Client]) -> None:
    server, client = scripted
    server.script = [(503, status(503, "ServiceUnavailable"))] * 5
    with pytest.raises(ServiceUnavailable):
        await client.resource("configmaps").list("default")
    assert len(server.seen) == 4, "one try and three retries"


async def test_writes_are_retried_on_429_but_not_on_5xx(
        scripted: tuple[ScriptedServer, Client]) -> None:
    server, client = scripted
    body = {"metadata": {"name": "a", "namespace": "default"}}
    server.script = [(429, status(429, "TooManyRequests")), (201, body)]
    assert await client.resource("configmaps").create(body) == body
    server.seen.clear()
    server.script = [(503, status(503, "ServiceUnavailable")), (201, body)]
    with pytest.raises(ServiceUnavailable):
        await client.resource("configmaps").create(body)
    assert server.seen == ["POST"], "the server may have acted: a write is not repeated"


async def test_errors_that_retrying_cannot_fix_are_raised_at_once(
        scripted: tuple[ScriptedServer, Client]) -> None:
    server, client = scripted
    server.script = [(404, status(404, "NotFound"))]
    with pytest.raises(NotFound):
        await client.resource("configmaps").get("a", "default")
    assert server.seen == ["GET"]
    server.script = [(429, status(429, "TooManyRequests"))] * 5
    with pytest.raises(TooManyRequests):
        await client.resource("configmaps").get("a", "default")


class Sink:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def replace(self, objects: list[dict], resource_version: str) -> None:
        self.calls.append(("replace", resource_version))

    def add(self, obj: dict) -> None:
        self.calls.append(("add", obj["metadata"]["name"]))

    def update(self, obj: dict) -> None:
        self.calls.append(("update", obj["metadata"]["name"]))

    def delete(self, obj: dict) -> None:
        self.calls.append(("delete", obj["metadata"]["name"]))


def event(kind: str, name: str, version: str) -> dict:
    return {"type": kind, "object": {"metadata": {"name": name, "resourceVersion": version}}}


async def test_reflector_feeds_events_in_order_and_bookmarks_only_move_the_version(
        scripted: tuple[ScriptedServer, Client]) -> None:
    server, client = scripted
    sink = Sink()
    reflector = Reflector(client.resource("configmaps"), sink)
    await reflector.list()
    assert sink.calls == [("replace", "7")]
    server.watch_lines = [event("ADDED", "a", "8"), event("MODIFIED", "a", "9"),
                          event("BOOKMARK", "", "12"), event("DELETED", "a", "13"),
                          event("BOOKMARK", "", "20")]
    await reflector.watch()
    assert sink.calls[1:] == [("add", "a"), ("update", "a"), ("delete", "a")]
    assert reflector.last_sync_resource_version == "20"


async def test_reflector_turns_a_410_error_event_into_a_relist(
        scripted: tuple[ScriptedServer, Client]) -> None:
    server, client = scripted
    reflector = Reflector(client.resource("configmaps"), Sink())
    server.watch_lines = [{"type": "ERROR", "object": status(410, "Expired")}]
    with pytest.raises(WatchExpired):
        await reflector.watch()


def test_backoff_doubles_up_to_its_cap_with_jitter_and_starts_over_after_reset() -> None:
    backoff = Backoff(0.8, 5.0, jitter=0.5)
    waits = [backoff.step() for _ in range(5)]
    for wait, base in zip(waits, [0.8, 1.6, 3.2, 5.0, 5.0], strict=True):
        assert base <= wait <= base * 1.5
    backoff.reset()
    assert 0.8 <= backoff.step() <= 1.2


def test_only_a_server_that_is_away_is_worth_waiting_for() -> None:
    away = [ConnectionFailed("refused"), TimeoutError(), status_error(status(503, "x"), 503),
            status_error(status(500, "InternalError"), 500),
            status_error(status(429, "TooManyRequests"), 429),
            status_error(status(504, "Timeout"), 504)]
    answers = [status_error(status(404, "NotFound"), 404),
               status_error(status(409, "Conflict"), 409),
               status_error(status(403, "Forbidden"), 403), ValueError("a bug")]
    assert [unavailable(error) for error in away] == [True] * len(away)
    assert [unavailable(error) for error in answers] == [False] * len(answers)


async def test_on_error_waits_out_an_unavailable_server_and_raises_an_answer_at_once(
        scripted: tuple[ScriptedServer, Client]) -> None:
    server, client = scripted
    body = {"metadata": {"name": "a", "namespace": "default"}}
    configmaps = client.resource("configmaps")
    server.script = [(429, status(429, "TooManyRequests"))] * 4 + [(201, body)]
    created = await on_error("creating a", lambda: configmaps.create(body),
                             backoff=Backoff(0.01, 0.02))
    assert created == body and server.seen == ["POST"] * 5
    server.seen.clear()
    server.script = [(409, status(409, "Conflict"))]
    with pytest.raises(Conflict):
        await on_error("updating a", lambda: configmaps.update(body), backoff=Backoff(0.01))
    assert server.seen == ["PUT"]
