"""Admission webhooks: a server of the test's own, registered with Mutating- and
ValidatingWebhookConfigurations, is asked about writes as upstream asks it (an
AdmissionReview over TLS checked against the caBundle), and its answers decide.

Every configuration here selects only its test's namespace (namespaceSelector on a
label that namespace alone carries), so the shared API server's other tests never
reach these webhooks.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from minikube_py.api import Obj
from minikube_py.apiserver.storage.etcd import EtcdClient
from minikube_py.client.errors import APIStatusError, NotFound
from minikube_py.client.rest import Client
from minikube_py.process import free_port
from minikube_py.security import pki
from minikube_py.tracing.context import ANNOTATION as TRACE_ANNOTATION
from tests.api_helpers import eventually

Answer = Callable[[Obj], Awaitable[Obj]]


@dataclass
class WebhookServer:
    """An HTTPS admission webhook: each path answers with a function of the request."""

    ca: pki.KeyPair
    port: int
    answers: dict[str, Answer] = field(default_factory=dict)
    seen: dict[str, list[Obj]] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.cert_pem).decode()

    async def handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.seen.setdefault(request.path, []).append(
            {**review["request"], "query": dict(request.query)})
        response = await self.answers[request.path](review["request"])
        return web.json_response({"apiVersion": "admission.k8s.io/v1",
                                  "kind": "AdmissionReview",
                                  "response": {"uid": review["request"]["uid"], **response}})


@pytest.fixture
async def webhook_server(tmp_path: Path) -> AsyncIterator[WebhookServer]:
    ca = pki.new_ca("webhook-ca")
    serving = pki.issue(ca, "webhook", dns_names=("webhook.test.svc",),
                        ip_addresses=("127.0.0.1",), server=True)
    cert, key = serving.write(tmp_path, "webhook")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = WebhookServer(ca, free_port())
    app = web.Application()
    app.router.add_post("/{path:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", server.port, ssl_context=context).start()
    yield server
    await runner.cleanup()


@pytest.fixture
async def labelled_namespace(api_client: Client, namespace: str) -> str:
    """The test's namespace, carrying the label its webhooks select."""
    await api_client.resource("namespaces").patch(
        namespace, {"metadata": {"labels": {"webhook-test": namespace}}})
    return namespace


@pytest.fixture
async def configurations(api_client: Client) -> AsyncIterator[Callable[..., Awaitable[str]]]:
    """Register webhook configurations; every one is deleted after the test."""
    made: list[tuple[str, str]] = []

    async def register(plural: str, webhooks: list[Obj]) -> str:
        name = f"test-{uuid.uuid4().hex[:8]}"
        kind = ("MutatingWebhookConfiguration" if plural.startswith("mutating")
                else "ValidatingWebhookConfiguration")
        await api_client.resource(plural, "admissionregistration.k8s.io").create(
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
             "metadata": {"name": name}, "webhooks": webhooks})
        made.append((plural, name))
        return name

    yield register
    for plural, name in made:
        await api_client.resource(plural, "admissionregistration.k8s.io").delete(name)


def webhook(name: str, server: WebhookServer, path: str, namespace: str, *,
            resources: tuple[str, ...] = ("configmaps",),
            operations: tuple[str, ...] = ("CREATE",), **extra: Any) -> Obj:
    return {
        "name": name,
        "clientConfig": {"url": server.url(path), "caBundle": server.ca_bundle},
        "rules": [{"operations": list(operations), "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": list(resources)}],
        "namespaceSelector": {"matchLabels": {"webhook-test": namespace}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **extra,
    }


def configmap(name: str, **labels: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}


async def allow(_: Obj) -> Obj:
    return {"allowed": True}


async def refused(api: Client, namespace: str, obj: Obj, *, dry_run: bool = True
                  ) -> APIStatusError | None:
    """The error a create gets, or None when it is admitted (a dry run writes nothing)."""
    try:
        await api.request("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                          params={"dryRun": "All"} if dry_run else None, body=obj)
    except APIStatusError as err:
        return err
    return None


async def test_a_denying_webhook_blocks_a_create_and_etcd_is_unchanged(
        api_client: Client, labelled_namespace: str, webhook_server: WebhookServer,
        configurations: Callable[..., Awaitable[str]], etcd_client: EtcdClient,
        kubectl: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    async def deny(_: Obj) -> Obj:
        return {"allowed": False, "status": {"message": "no configmaps here", "code": 403}}

    webhook_server.answers["/deny"] = deny
    namespace = labelled_namespace
    await configurations("validatingwebhookconfigurations", [
        webhook("deny.example.com", webhook_server, "/deny", namespace)])
    # The server reads configurations from its watch cache: wait until it has this one.
    error = await eventually(lambda: refused(api_client, namespace, configmap("probe")),
                             what="the webhook in force")
    assert error is not None and error.code == 403

    # kubectl in a thread: the webhook answers from this test's event loop.
    created = await asyncio.to_thread(kubectl, "create", "configmap", "blocked", "-n",
                                      namespace, "--from-literal=a=b", check=False)
    assert created.returncode != 0
    assert created.stderr.strip() == (
        'error: failed to create configmap: admission webhook "deny.example.com" denied '
        "the request: no configmaps here")
    assert await etcd_client.get(f"/registry/configmaps/{namespace}/blocked".encode()) is None
    with pytest.raises(NotFound):
        await api_client.resource("configmaps").get("blocked", namespace)

    asked = webhook_server.seen["/deny"][-1]
    assert asked["operation"] == "CREATE"
    assert asked["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert asked["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert (asked["namespace"], asked["name"], asked["dryRun"]) == (namespace, "blocked", False)
    assert asked["object"]["data"] == {"a": "b"}
    assert asked["userInfo"]["username"] == "system:anonymous" or asked["userInfo"]["username"]
    assert asked["options"] == {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
    assert asked["query"] == {"timeout": "10s"}

    # Another namespace is not selected: the same create is admitted there.
    other = f"other-{uuid.uuid4().hex[:8]}"
    await api_client.resource("namespaces").create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    assert await refused(api_client, other, configmap("fine"), dry_run=False) is None
    await api_client.resource("namespaces").delete(other)


async def test_a_mutating_webhook_patches_and_is_reinvoked_if_needed(
        api_client: Client, labelled_namespace: str, webhook_server: WebhookServer,
        configurations: Callable[..., Awaitable[str]]) -> None:
    def patch(operations: list[Obj]) -> Obj:
        return {"allowed": True, "patchType": "JSONPatch",
                "patch": base64.b64encode(orjson.dumps(operations)).decode()}

    async def add_team(request: Obj) -> Obj:
        labels = request["object"]["metadata"].get("labels") or {}
        if labels.get("team") == "blue":
            return {"allowed": True}
        return patch([{"op": "add", "path": "/metadata/labels/team", "value": "blue"}])

    async def count_labels(request: Obj) -> Obj:
        labels = request["object"]["metadata"].get("labels") or {}
        return patch([{"op": "add", "path": "/metadata/annotations",
                       "value": {"labels-seen": str(len(labels))}}])

    webhook_server.answers |= {"/team": add_team, "/count": count_labels}
    namespace = labelled_namespace
    # Configurations run by name: "a-…" (count, reinvoked if needed) before "b-…" (team).
    count = webhook("count.example.com", webhook_server, "/count", namespace,
                    reinvocationPolicy="IfNeeded")
    team = webhook("team.example.com", webhook_server, "/team", namespace)
    await api_client.resource("mutatingwebhookconfigurations",
                              "admissionregistration.k8s.io").create(
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "MutatingWebhookConfiguration", "metadata": {"name": f"a-{namespace}"},
         "webhooks": [count]})
    await api_client.resource("mutatingwebhookconfigurations",
                              "admissionregistration.k8s.io").create(
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "MutatingWebhookConfiguration", "metadata": {"name": f"b-{namespace}"},
         "webhooks": [team]})
    try:
        async def both_in_force() -> bool:
            webhook_server.seen.clear()
            await refused(api_client, namespace, configmap("probe"))
            return "/team" in webhook_server.seen and "/count" in webhook_server.seen

        await eventually(both_in_force, what="both webhooks in force")
        webhook_server.seen.clear()
        created = await api_client.resource("configmaps").create(
            configmap("patched", app="web"), namespace)
        # team added a label after count had run, so count ran again and saw two labels.
        assert created["metadata"]["labels"] == {"app": "web", "team": "blue"}
        assert created["metadata"]["annotations"] == {"labels-seen": "2"}
        assert len(webhook_server.seen["/count"]) == 2
        assert len(webhook_server.seen["/team"]) == 1
        stored = await api_client.resource("configmaps").get("patched", namespace)
        assert stored["metadata"]["labels"]["team"] == "blue"
    finally:
        for prefix in ("a", "b"):
            await api_client.resource("mutatingwebhookconfigurations",
                                      "admissionregistration.k8s.io").delete(
                f"{prefix}-{namespace}")


async def test_a_timing_out_webhook_admits_with_ignore_and_refuses_with_fail(
        api_client: Client, labelled_namespace: str, webhook_server: WebhookServer,
        configurations: Callable[..., Awaitable[str]]) -> None:
    async def slow(_: Obj) -> Obj:
        await asyncio.sleep(3)
        return {"allowed": True}

    webhook_server.answers["/slow"] = slow
    namespace = labelled_namespace
    ignoring = await configurations("validatingwebhookconfigurations", [
        webhook("slow.example.com", webhook_server, "/slow", namespace, timeoutSeconds=1,
                failurePolicy="Ignore")])

    async def asked_and_admitted() -> bool:
        webhook_server.seen.clear()
        error = await refused(api_client, namespace, configmap("probe"))
        return error is None and "/slow" in webhook_server.seen

    await eventually(asked_and_admitted, what="the ignoring webhook in force")
    assert await refused(api_client, namespace, configmap("admitted"), dry_run=False) is None

    await api_client.resource("validatingwebhookconfigurations",
                              "admissionregistration.k8s.io").patch(
        ignoring, [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Fail"}],
        patch_type="json")
    error = await eventually(lambda: refused(api_client, namespace, configmap("probe")),
                             what="the failing webhook in force")
    assert error is not None and error.code == 500
    message = ('failed calling webhook "slow.example.com": failed to call webhook: Post '
               f'"{webhook_server.url("/slow")}?timeout=1s": context deadline exceeded')
    assert error.status["reason"] == "InternalError"
    assert error.status["message"] == f"Internal error occurred: {message}"
    assert error.status["details"]["causes"] == [{"message": message}]


async def test_selectors_and_operations_choose_what_a_webhook_sees(
        api_client: Client, labelled_namespace: str, webhook_server: WebhookServer,
        configurations: Callable[..., Awaitable[str]]) -> None:
    async def deny_deletes(request: Obj) -> Obj:
        if request["operation"] == "DELETE":
            return {"allowed": False, "status": {"reason": "Forbidden",
                                                 "message": "keep it"}}
        return {"allowed": True}

    webhook_server.answers["/guard"] = deny_deletes
    namespace = labelled_namespace
    await configurations("validatingwebhookconfigurations", [
        webhook("guard.example.com", webhook_server, "/guard", namespace,
                operations=("CREATE", "DELETE"),
                objectSelector={"matchLabels": {"guarded": "yes"}})])
    configmaps = api_client.resource("configmaps")

    async def guarded_create_seen() -> bool:
        await refused(api_client, namespace, configmap("probe", guarded="yes"))
        return "/guard" in webhook_server.seen

    await eventually(guarded_create_seen, what="the guard in force")
    await configmaps.create(configmap("guarded", guarded="yes"), namespace)
    await configmaps.create(configmap("free"), namespace)
    with pytest.raises(APIStatusError) as denied:
        await configmaps.delete("guarded", namespace)
    assert denied.value.code == 403
    assert str(denied.value) == ('admission webhook "guard.example.com" denied the request: '
                                 "keep it")
    asked = webhook_server.seen["/guard"][-1]
    assert asked["operation"] == "DELETE" and asked["object"] is None
    assert asked["oldObject"]["metadata"]["name"] == "guarded"
    assert asked["options"]["kind"] == "DeleteOptions"
    assert await configmaps.get("guarded", namespace)
    # Not selected by objectSelector: neither its create nor its delete was sent.
    await configmaps.delete("free", namespace)
    assert not any(seen["name"] == "free" for seen in webhook_server.seen["/guard"])


async def test_a_broken_webhook_never_blocks_its_own_configuration(
        api_client: Client, labelled_namespace: str) -> None:
    """Webhook configurations are not sent to webhooks: a webhook that matches
    everything and cannot be reached can still be removed."""
    unreachable = {
        "name": "broken.example.com",
        "clientConfig": {"url": f"https://127.0.0.1:{free_port()}/nobody"},
        "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                   "resources": ["*/*"]}],
        "objectSelector": {"matchLabels": {"broken-test": labelled_namespace}},
        "sideEffects": "None", "admissionReviewVersions": ["v1"]}
    configurations = api_client.resource("validatingwebhookconfigurations",
                                         "admissionregistration.k8s.io")
    name = f"broken-{labelled_namespace}"
    await configurations.create({"apiVersion": "admissionregistration.k8s.io/v1",
                                 "kind": "ValidatingWebhookConfiguration",
                                 "metadata": {"name": name,
                                              "labels": {"broken-test": labelled_namespace}},
                                 "webhooks": [unreachable]})
    error = await eventually(
        lambda: refused(api_client, labelled_namespace,
                        configmap("probe", **{"broken-test": labelled_namespace})),
        what="the broken webhook in force")
    assert error is not None and error.code == 500
    await configurations.patch(name, {"metadata": {"annotations": {"still": "editable"}}})
    await configurations.delete(name)


async def test_a_webhook_never_sees_the_trace_context_an_object_carries(
        kubeconfig: Path, labelled_namespace: str, webhook_server: WebhookServer,
        configurations: Callable[..., Awaitable[str]]) -> None:
    """Upstream writes no trace context on objects, so the AdmissionReview of an update
    of one that carries it (a component's) shows it in neither object nor oldObject."""
    webhook_server.answers["/see"] = allow
    namespace = labelled_namespace
    await configurations("validatingwebhookconfigurations", [
        webhook("see.example.com", webhook_server, "/see", namespace,
                operations=("UPDATE",))])
    async with Client.from_kubeconfig(kubeconfig, trace_context=True) as component:
        configmaps = component.resource("configmaps")
        made = configmap("traced")
        made["metadata"]["annotations"] = {
            "note": "mine", TRACE_ANNOTATION: f"00-{'a' * 32}-{'b' * 16}-01"}
        await configmaps.create(made, namespace)
        writes = iter(range(1000))

        async def update_seen() -> bool:
            await configmaps.patch("traced", {"data": {"k": str(next(writes))}}, namespace)
            return "/see" in webhook_server.seen

        await eventually(update_seen, what="the webhook in force")
        stored = await configmaps.get("traced", namespace)
    assert TRACE_ANNOTATION in stored["metadata"]["annotations"]
    asked = webhook_server.seen["/see"][-1]
    for side in ("object", "oldObject"):
        assert asked[side]["metadata"]["annotations"] == {"note": "mine"}, side
