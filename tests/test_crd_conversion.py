"""Conversion strategy Webhook: the API server asks a definition's webhook (the example
in examples/crd-conversion-webhook/, run as its own process over TLS) to convert custom
resources between versions, on reads, writes and watches. Mirrors upstream's
test/e2e/apimachinery/crd_conversion_webhook.go (v1 to v2; a list of objects stored in
both versions), with the real kubectl and the official `kubernetes` client; and
server-side apply across versions, where upstream reads each manager's fields in the
version it wrote them in."""

from __future__ import annotations

import base64
import contextlib
import copy
import http.client
import json
import socket
import ssl
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from minikube_py.client.rest import Client
from minikube_py.process import free_port
from minikube_py.security import pki
from minikube_py.tracing.context import ANNOTATION as TRACE_ANNOTATION
from tests.api_helpers import delete_definition, official_crd_clients, served, until
from tests.test_api_server_outage import host_address

# On the session's API server: every definition made here has a group of its own and
# is deleted at the end, and so is the webhook's Service in `default`.
api_client, extensions, custom = official_crd_clients()

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "crd-conversion-webhook"
GROUP = "stable.example.com"


class WebhookProcess:
    """The example webhook, serving with a certificate of a CA of its own."""

    def __init__(self, directory: Path) -> None:
        self.ca = pki.new_ca("conversion-webhook-ca")
        serving = pki.issue(self.ca, "crd-conversion-webhook",
                            dns_names=("crd-conversion-webhook.default.svc",),
                            ip_addresses=("127.0.0.1",), server=True)
        cert, key = serving.write(directory, "webhook")
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, str(EXAMPLE / "webhook.py"), "--tls-cert-file", str(cert),
             "--tls-private-key-file", str(key), "--port", str(self.port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.cert_pem).decode()

    def url(self, path: str = "/crdconvert") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def serving(self) -> bool:
        """Whether it answers a TLS handshake checked against its CA."""
        context = ssl.create_default_context(cadata=self.ca.cert_pem.decode())
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as raw, \
                    context.wrap_socket(raw, server_hostname="127.0.0.1"):
                return True
        except OSError:
            assert self.process.poll() is None, self.process.stdout.read()  # type: ignore[union-attr]
            return False


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    process = WebhookProcess(tmp_path_factory.mktemp("conversion-webhook"))
    try:
        until(process.serving, "the conversion webhook serving")
        yield process
    finally:
        process.process.terminate()
        process.process.wait(timeout=10)


def example_crd(group: str, client_config: dict[str, Any]) -> dict[str, Any]:
    """The example's definition, in a group of the test's own, calling `client_config`."""
    crd = yaml.safe_load((EXAMPLE / "crd.yaml").read_text())
    crd["metadata"]["name"] = f"crontabs.{group}"
    crd["spec"]["group"] = group
    crd["spec"]["conversion"]["webhook"]["clientConfig"] = client_config
    return crd


def unique_group() -> str:
    return f"g{uuid.uuid4().hex[:8]}.example.com"


def install(extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi,
            crd: dict[str, Any]) -> str:
    """Create the definition and wait until both versions are served; its group."""
    extensions.create_custom_resource_definition(crd)
    group = crd["spec"]["group"]

    until(lambda: served(custom, group, "crontabs", "v1", "v2"), f"crontabs.{group} served")
    return group


@pytest.fixture
def crontabs(extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi,
             webhook: WebhookProcess) -> Iterator[str]:
    """The example's definition, its webhook reached by URL: its group."""
    crd = example_crd(unique_group(), {"url": webhook.url(), "caBundle": webhook.ca_bundle})
    group = install(extensions, custom, crd)
    yield group
    delete_definition(extensions, f"crontabs.{group}")


def crontab(group: str, version: str, name: str, namespace: str, spec: dict[str, str]
            ) -> dict[str, Any]:
    return {"apiVersion": f"{group}/{version}", "kind": "CronTab",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


# -- upstream's cases ------------------------------------------------------------------------

def test_a_v1_object_reads_as_v2_and_back(custom: client.CustomObjectsApi, crontabs: str,
                                         namespace: str) -> None:
    """"should be able to convert from CR v1 to CR v2"."""
    custom.create_namespaced_custom_object(
        crontabs, "v1", namespace, "crontabs",
        crontab(crontabs, "v1", "cr-v1", namespace, {"hostPort": "localhost:7070"}))
    as_v2 = custom.get_namespaced_custom_object(crontabs, "v2", namespace, "crontabs", "cr-v1")
    assert as_v2["apiVersion"] == f"{crontabs}/v2"
    assert as_v2["spec"] == {"host": "localhost", "port": "7070"}
    as_v1 = custom.get_namespaced_custom_object(crontabs, "v1", namespace, "crontabs", "cr-v1")
    assert as_v1["spec"] == {"hostPort": "localhost:7070"}
    assert as_v1["metadata"]["uid"] == as_v2["metadata"]["uid"]


def test_a_v2_write_is_stored_in_v1_and_updates_convert_too(
        custom: client.CustomObjectsApi, crontabs: str, namespace: str) -> None:
    created = custom.create_namespaced_custom_object(
        crontabs, "v2", namespace, "crontabs",
        crontab(crontabs, "v2", "cr-v2", namespace, {"host": "example.org", "port": "80"}))
    assert created["apiVersion"] == f"{crontabs}/v2"
    assert created["spec"] == {"host": "example.org", "port": "80"}
    created["spec"]["port"] = "8080"
    updated = custom.replace_namespaced_custom_object(
        crontabs, "v2", namespace, "crontabs", "cr-v2", created)
    assert updated["spec"] == {"host": "example.org", "port": "8080"}
    patched = custom.patch_namespaced_custom_object(
        crontabs, "v1", namespace, "crontabs", "cr-v2", {"spec": {"hostPort": "a:1"}})
    assert patched["spec"] == {"hostPort": "a:1"}
    as_v2 = custom.get_namespaced_custom_object(crontabs, "v2", namespace, "crontabs", "cr-v2")
    assert as_v2["spec"] == {"host": "a", "port": "1"}


def test_a_list_of_objects_stored_in_both_versions(
        extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi,
        crontabs: str, namespace: str) -> None:
    """"should be able to convert a non homogeneous list of CRs": one object stored in
    v1, the storage version moved to v2, one stored in v2, both listed in each version."""
    custom.create_namespaced_custom_object(
        crontabs, "v1", namespace, "crontabs",
        crontab(crontabs, "v1", "cr-stored-v1", namespace, {"hostPort": "localhost:7070"}))
    name = f"crontabs.{crontabs}"
    crd = extensions.read_custom_resource_definition(name)
    crd.spec.versions[0].storage, crd.spec.versions[1].storage = False, True
    extensions.replace_custom_resource_definition(name, crd)

    def stored_in_v2() -> bool:
        created = custom.create_namespaced_custom_object(
            crontabs, "v2", namespace, "crontabs",
            crontab(crontabs, "v2", f"probe-{uuid.uuid4().hex[:6]}", namespace,
                    {"host": "h", "port": "1"}))
        stored = extensions.read_custom_resource_definition(name).status.stored_versions
        custom.delete_namespaced_custom_object(crontabs, "v2", namespace, "crontabs",
                                               created["metadata"]["name"])
        return stored == ["v1", "v2"]

    until(stored_in_v2, "v2 the storage version")
    custom.create_namespaced_custom_object(
        crontabs, "v2", namespace, "crontabs",
        crontab(crontabs, "v2", "cr-stored-v2", namespace, {"host": "localhost", "port": "8080"}))
    listed_v1 = custom.list_namespaced_custom_object(crontabs, "v1", namespace, "crontabs")
    assert {o["metadata"]["name"]: (o["apiVersion"], o["spec"]) for o in listed_v1["items"]} == {
        "cr-stored-v1": (f"{crontabs}/v1", {"hostPort": "localhost:7070"}),
        "cr-stored-v2": (f"{crontabs}/v1", {"hostPort": "localhost:8080"})}
    listed_v2 = custom.list_namespaced_custom_object(crontabs, "v2", namespace, "crontabs")
    assert {o["metadata"]["name"]: o["spec"] for o in listed_v2["items"]} == {
        "cr-stored-v1": {"host": "localhost", "port": "7070"},
        "cr-stored-v2": {"host": "localhost", "port": "8080"}}


def test_a_write_is_validated_in_the_version_it_was_written_in(
        extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi,
        webhook: WebhookProcess, namespace: str) -> None:
    """The schema of the request's version judges it, before it is converted for
    storage (v2's port must be digits; v1, the storage version, knows no port)."""
    crd = example_crd(unique_group(), {"url": webhook.url(), "caBundle": webhook.ca_bundle})
    v2 = crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]
    v2["properties"]["spec"]["properties"]["port"]["pattern"] = "^[0-9]+$"
    group = install(extensions, custom, crd)
    try:
        with pytest.raises(ApiException) as raised:
            custom.create_namespaced_custom_object(
                group, "v2", namespace, "crontabs",
                crontab(group, "v2", "bad-port", namespace, {"host": "h", "port": "http"}))
        assert raised.value.status == 422
        causes = json.loads(raised.value.body)["details"]["causes"]
        assert [cause["field"] for cause in causes] == ["spec.port"]
        custom.create_namespaced_custom_object(
            group, "v1", namespace, "crontabs",
            crontab(group, "v1", "v1-port", namespace, {"hostPort": "h:80"}))
        with pytest.raises(ApiException) as raised:
            custom.patch_namespaced_custom_object(group, "v2", namespace, "crontabs",
                                                  "v1-port", {"spec": {"port": "eighty"}})
        assert raised.value.status == 422
    finally:
        delete_definition(extensions, crd["metadata"]["name"])


# -- reads, writes and watches in the other version -----------------------------------------

def test_kubectl_creates_in_v1_and_reads_in_v2(kubectl: Any, crontabs: str,
                                               namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(
        crontab(crontabs, "v1", "by-kubectl", namespace, {"hostPort": "db:5432"})))
    got = json.loads(kubectl("get", f"crontabs.v2.{crontabs}", "by-kubectl", "-n", namespace,
                             "-o", "json").stdout)
    assert (got["apiVersion"], got["spec"]) == (f"{crontabs}/v2",
                                                {"host": "db", "port": "5432"})
    listed = json.loads(kubectl("get", f"crontabs.v1.{crontabs}", "-n", namespace,
                                "-o", "json").stdout)
    assert [item["spec"] for item in listed["items"]] == [{"hostPort": "db:5432"}]


# -- server-side apply across versions ---------------------------------------------------------

def server_side_apply(kubectl: Any, group: str, version: str, namespace: str, manager: str,
                      spec: dict[str, str], *extra: str) -> Any:
    """kubectl apply --server-side of the CronTab `shared` in `version` as `manager`."""
    return kubectl("apply", "--server-side", f"--field-manager={manager}", "-n", namespace,
                   "-f", "-", *extra, check=False, input=json.dumps(
                       crontab(group, version, "shared", namespace, spec)))


def managers_of(kubectl: Any, group: str, version: str, namespace: str
                ) -> dict[str, tuple[str, list[str]]]:
    """Each managedFields entry of the CronTab `shared` read in `version`: its manager ->
    (apiVersion, the fields it owns under spec)."""
    got = json.loads(kubectl("get", f"crontabs.{version}.{group}", "shared", "-n", namespace,
                             "--show-managed-fields", "-o", "json").stdout)
    return {entry["manager"]: (entry["apiVersion"],
                               sorted(entry["fieldsV1"].get("f:spec", {})))
            for entry in got["metadata"]["managedFields"]}


def test_an_apply_in_v2_conflicts_with_the_v1_owner_of_the_field_it_renames(
        kubectl: Any, crontabs: str, namespace: str) -> None:
    """Upstream compares a write in each manager's own version (structured-merge-diff's
    Updater converts the old and new objects to it): v2's host is v1's hostPort, so
    applying another host in v2 conflicts with the manager that applied hostPort in v1,
    named by v1's path; the same value is shared ownership, each entry in its version."""
    assert server_side_apply(kubectl, crontabs, "v1", namespace, "alice",
                             {"hostPort": "localhost:7070"}).returncode == 0
    refused = server_side_apply(kubectl, crontabs, "v2", namespace, "bob",
                                {"host": "example.com", "port": "7070"})
    assert refused.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "alice": .spec.hostPort' in \
        refused.stderr
    shared = server_side_apply(kubectl, crontabs, "v2", namespace, "bob",
                               {"host": "localhost", "port": "7070"})
    assert shared.returncode == 0, shared.stderr
    assert managers_of(kubectl, crontabs, "v2", namespace) == {
        "alice": (f"{crontabs}/v1", ["f:hostPort"]),
        "bob": (f"{crontabs}/v2", ["f:host", "f:port"])}


def test_a_forced_apply_in_v2_takes_the_renamed_field_from_its_v1_owner(
        kubectl: Any, crontabs: str, namespace: str) -> None:
    assert server_side_apply(kubectl, crontabs, "v1", namespace, "alice",
                             {"hostPort": "localhost:7070"}).returncode == 0
    forced = server_side_apply(kubectl, crontabs, "v2", namespace, "bob",
                               {"host": "example.com", "port": "7070"}, "--force-conflicts")
    assert forced.returncode == 0, forced.stderr
    assert managers_of(kubectl, crontabs, "v1", namespace) == {
        "bob": (f"{crontabs}/v2", ["f:host", "f:port"])}
    # alice no longer owns hostPort: her next apply of the old value conflicts with bob
    refused = server_side_apply(kubectl, crontabs, "v1", namespace, "alice",
                                {"hostPort": "localhost:7070"})
    assert 'conflict with "bob": .spec.host' in refused.stderr, refused.stderr


def test_a_patch_in_v2_takes_the_renamed_field_from_its_v1_applier(
        kubectl: Any, crontabs: str, namespace: str) -> None:
    """A write that is not an apply never conflicts: it takes what it changes, compared
    in each owner's version, so the v1 applier of hostPort loses it to a v2 patch of
    host (and its entry goes with its last field); the patcher owns what changed in v2."""
    assert server_side_apply(kubectl, crontabs, "v1", namespace, "alice",
                             {"hostPort": "localhost:7070"}).returncode == 0
    kubectl("patch", f"crontabs.v2.{crontabs}", "shared", "-n", namespace, "--type=merge",
            "--field-manager=bob", "-p", json.dumps({"spec": {"host": "example.com"}}))
    assert managers_of(kubectl, crontabs, "v2", namespace) == {
        "bob": (f"{crontabs}/v2", ["f:host"])}


def test_a_manager_applying_in_v2_what_it_applied_in_v1_keeps_one_entry_in_v2(
        kubectl: Any, crontabs: str, namespace: str) -> None:
    """An applier's identifier leaves out its apiVersion: its apply in v2 replaces its
    v1 set (pruned in v1, where it was written), and the field keeps the new value."""
    assert server_side_apply(kubectl, crontabs, "v1", namespace, "alice",
                             {"hostPort": "localhost:7070"}).returncode == 0
    moved = server_side_apply(kubectl, crontabs, "v2", namespace, "alice",
                              {"host": "example.com", "port": "8080"})
    assert moved.returncode == 0, moved.stderr
    assert managers_of(kubectl, crontabs, "v2", namespace) == {
        "alice": (f"{crontabs}/v2", ["f:host", "f:port"])}
    got = json.loads(kubectl("get", f"crontabs.v1.{crontabs}", "shared", "-n", namespace,
                             "-o", "json").stdout)
    assert got["spec"] == {"hostPort": "example.com:8080"}


def test_a_watch_in_v2_sees_objects_written_in_v1(custom: client.CustomObjectsApi,
                                                  crontabs: str, namespace: str) -> None:
    """crd_watch.go's sequence, written in v1 and watched in v2 from the list's
    resourceVersion."""
    version = custom.list_namespaced_custom_object(
        crontabs, "v2", namespace, "crontabs")["metadata"]["resourceVersion"]
    custom.create_namespaced_custom_object(
        crontabs, "v1", namespace, "crontabs",
        crontab(crontabs, "v1", "watched", namespace, {"hostPort": "w:1"}))
    custom.patch_namespaced_custom_object(crontabs, "v1", namespace, "crontabs", "watched",
                                          {"spec": {"hostPort": "w:2"}})
    custom.delete_namespaced_custom_object(crontabs, "v1", namespace, "crontabs", "watched")
    seen = []
    for event in watch.Watch().stream(custom.list_namespaced_custom_object, crontabs, "v2",
                                      namespace, "crontabs", resource_version=version,
                                      timeout_seconds=30):
        seen.append((event["type"], event["object"]["apiVersion"], event["object"]["spec"]))
        if event["type"] == "DELETED":
            break
    assert seen == [("ADDED", f"{crontabs}/v2", {"host": "w", "port": "1"}),
                    ("MODIFIED", f"{crontabs}/v2", {"host": "w", "port": "2"}),
                    ("DELETED", f"{crontabs}/v2", {"host": "w", "port": "2"})]


# -- the service form, and a failing webhook ------------------------------------------------

def test_a_webhook_reached_through_a_service(
        extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi,
        api_client: client.ApiClient, webhook: WebhookProcess, namespace: str) -> None:
    """clientConfig.service: the Service's endpoint, TLS checked against
    <name>.<namespace>.svc."""
    core = client.CoreV1Api(api_client)
    core.create_namespaced_service("default", {
        "metadata": {"name": "crd-conversion-webhook"},
        "spec": {"ports": [{"port": 9443, "targetPort": webhook.port}]}})
    discovery = client.DiscoveryV1Api(api_client)
    discovery.create_namespaced_endpoint_slice("default", {
        "metadata": {"name": "crd-conversion-webhook",
                     "labels": {"kubernetes.io/service-name": "crd-conversion-webhook"}},
        "addressType": "IPv4", "ports": [{"port": webhook.port}],
        "endpoints": [{"addresses": [host_address()], "conditions": {"ready": True}}]})
    crd = example_crd(unique_group(), {"caBundle": webhook.ca_bundle, "service": {
        "namespace": "default", "name": "crd-conversion-webhook", "path": "/crdconvert",
        "port": 9443}})
    group = install(extensions, custom, crd)
    try:
        custom.create_namespaced_custom_object(
            group, "v2", namespace, "crontabs",
            crontab(group, "v2", "via-service", namespace, {"host": "s", "port": "9"}))
        got = custom.get_namespaced_custom_object(group, "v1", namespace, "crontabs",
                                                  "via-service")
        assert got["spec"] == {"hostPort": "s:9"}
    finally:
        delete_definition(extensions, crd["metadata"]["name"])
        discovery.delete_namespaced_endpoint_slice("crd-conversion-webhook", "default")
        core.delete_namespaced_service("crd-conversion-webhook", "default")


def test_a_failing_webhook_gives_upstreams_internal_error(
        extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi,
        webhook: WebhookProcess, crontabs: str, namespace: str) -> None:
    custom.create_namespaced_custom_object(
        crontabs, "v1", namespace, "crontabs",
        crontab(crontabs, "v1", "stranded", namespace, {"hostPort": "x:1"}))
    name = f"crontabs.{crontabs}"
    crd = extensions.read_custom_resource_definition(name)
    # a path the webhook does not serve: it answers 404
    crd.spec.conversion.webhook.client_config.url = webhook.url("/nowhere")
    extensions.replace_custom_resource_definition(name, crd)

    def refused() -> ApiException | None:
        try:
            custom.get_namespaced_custom_object(crontabs, "v2", namespace, "crontabs",
                                                "stranded")
        except ApiException as err:
            return err
        return None

    err = until(refused, "the broken webhook in force")
    assert err.status == 500
    status = json.loads(err.body)
    assert status["reason"] == "InternalError"
    assert status["message"] == (
        f"Internal error occurred: conversion webhook for {crontabs}/v1, Kind=CronTab "
        "failed: failed to call webhook: the server responded with the status code 404 "
        "but did not return more information")
    # the stored version still reads without a call
    same = custom.get_namespaced_custom_object(crontabs, "v1", namespace, "crontabs",
                                               "stranded")
    assert same["spec"] == {"hostPort": "x:1"}


# -- upstream's checks of the webhook's answer ----------------------------------------------

Answer = Callable[[dict[str, Any]], dict[str, Any]]


class ScriptedWebhook:
    """An HTTPS webhook whose ConversionReview answer is `answer(review)`."""

    def __init__(self, directory: Path) -> None:
        self.ca = pki.new_ca("scripted-webhook-ca")
        cert, key = pki.issue(self.ca, "scripted", ip_addresses=("127.0.0.1",),
                              server=True).write(directory, "scripted")
        self.answer: Answer = lambda review: {}
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                body = json.dumps(scripted.answer(review)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the test reads the answers, not the log."""

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def client_config(self) -> dict[str, str]:
        return {"url": f"https://127.0.0.1:{self.server.server_address[1]}/convert",
                "caBundle": base64.b64encode(self.ca.cert_pem).decode()}


@pytest.fixture
def scripted(tmp_path: Path, extensions: client.ApiextensionsV1Api,
             custom: client.CustomObjectsApi) -> Iterator[tuple[ScriptedWebhook, str]]:
    """A definition whose webhook answers as the test scripts it: the webhook, the group."""
    webhook = ScriptedWebhook(tmp_path)
    crd = example_crd(unique_group(), webhook.client_config)
    try:
        group = install(extensions, custom, crd)
        yield webhook, group
    finally:
        with contextlib.suppress(ApiException):
            delete_definition(extensions, crd["metadata"]["name"])
        webhook.server.shutdown()
        webhook.server.server_close()


def converted(change: Callable[[dict[str, Any]], None], *, uid: str | None = None,
              kind: str = "ConversionReview") -> Answer:
    """An answer that converts (v1 to v2, relabelling only) and then applies `change`."""
    def answer(review: dict[str, Any]) -> dict[str, Any]:
        request = review["request"]
        objects = []
        for obj in request["objects"]:
            obj = {**copy.deepcopy(obj), "apiVersion": request["desiredAPIVersion"]}
            change(obj)
            objects.append(obj)
        return {"apiVersion": "apiextensions.k8s.io/v1", "kind": kind,
                "response": {"uid": request["uid"] if uid is None else uid,
                             "convertedObjects": objects, "result": {"status": "Success"}}}
    return answer


def read_v2(custom: client.CustomObjectsApi, group: str, namespace: str
            ) -> dict[str, Any] | ApiException:
    try:
        got: dict[str, Any] = custom.get_namespaced_custom_object(group, "v2", namespace,
                                                                  "crontabs", "one")
    except ApiException as err:
        return err
    return got


def test_a_webhook_may_change_labels_and_annotations_and_nothing_else_of_metadata(
        custom: client.CustomObjectsApi, scripted: tuple[ScriptedWebhook, str],
        namespace: str) -> None:
    webhook, group = scripted
    custom.create_namespaced_custom_object(
        group, "v1", namespace, "crontabs",
        crontab(group, "v1", "one", namespace, {"hostPort": "a:1"}))

    def relabel(obj: dict[str, Any]) -> None:
        obj["metadata"]["labels"] = {"converted": "yes"}
        obj["metadata"]["generation"] = 99
        obj["metadata"]["finalizers"] = ["example.com/added"]

    webhook.answer = converted(relabel)
    got = read_v2(custom, group, namespace)
    assert isinstance(got, dict), got
    assert got["metadata"]["labels"] == {"converted": "yes"}
    assert got["metadata"]["generation"] == 1
    assert "finalizers" not in got["metadata"]


async def test_a_webhook_never_sees_the_trace_context_and_the_object_keeps_it(
        kubeconfig: Path, scripted: tuple[ScriptedWebhook, str], namespace: str) -> None:
    """As admission webhooks: the ConversionReview carries no trace context, and the
    converted object keeps the original's."""
    webhook, group = scripted
    asked: list[dict[str, Any]] = []

    def record(review: dict[str, Any]) -> dict[str, Any]:
        asked.extend(review["request"]["objects"])
        return converted(lambda obj: None)(review)

    webhook.answer = record
    trace = f"00-{'a' * 32}-{'b' * 16}-01"
    made = crontab(group, "v1", "traced", namespace, {"hostPort": "t:1"})
    made["metadata"]["annotations"] = {"note": "mine", TRACE_ANNOTATION: trace}
    base = f"/apis/{group}/v2/namespaces/{namespace}/crontabs"
    async with Client.from_kubeconfig(kubeconfig, trace_context=True) as component:
        await component.request("POST", f"/apis/{group}/v1/namespaces/{namespace}/crontabs",
                                body=made)
        got = await component.request("GET", f"{base}/traced")
    assert got["apiVersion"] == f"{group}/v2"
    assert got["metadata"]["annotations"] == {"note": "mine", TRACE_ANNOTATION: trace}
    assert asked and all(obj["metadata"]["annotations"] == {"note": "mine"} for obj in asked)


@pytest.mark.parametrize(("answer", "message"), [
    (converted(lambda obj: obj["metadata"].update(name="other")),
     "returned invalid object: must have the same name: one != other"),
    (converted(lambda obj: obj["metadata"].update(labels={"bad key!": "x"})),
     "returned invalid metadata: metadata.labels: Invalid value: \"bad key!\""),
    (converted(lambda obj: obj.update(kind="Other")),
     "returned invalid object at index 0: invalid kind (expected CronTab, received Other)"),
    (converted(lambda obj: None, uid="not-the-request"),
     'failed: expected response.uid="'),
    (converted(lambda obj: None, kind="AdmissionReview"),
     "failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, "
     "got apiextensions.k8s.io/v1, Kind=AdmissionReview"),
    (lambda review: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                     "response": {"uid": review["request"]["uid"], "convertedObjects": [],
                                  "result": {"status": "Failure", "message": "no thanks"}}},
     "failed: no thanks"),
    (lambda review: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                     "response": {"uid": review["request"]["uid"], "convertedObjects": [],
                                  "result": {"status": "Success"}}},
     "returned 0 objects, expected 1"),
])
def test_a_bad_answer_is_refused_with_upstreams_message(
        custom: client.CustomObjectsApi, scripted: tuple[ScriptedWebhook, str],
        namespace: str, answer: Answer, message: str) -> None:
    webhook, group = scripted
    custom.create_namespaced_custom_object(
        group, "v1", namespace, "crontabs",
        crontab(group, "v1", "one", namespace, {"hostPort": "a:1"}))
    webhook.answer = answer
    err = read_v2(custom, group, namespace)
    assert isinstance(err, ApiException), err
    assert err.status == 500
    text = json.loads(err.body)["message"]
    assert text.startswith(f"Internal error occurred: conversion webhook for {group}/v1, "
                           "Kind=CronTab "), text
    assert message in text, text


def test_a_watch_whose_event_cannot_be_converted_ends_with_an_error_event(
        custom: client.CustomObjectsApi, scripted: tuple[ScriptedWebhook, str],
        namespace: str) -> None:
    webhook, group = scripted
    webhook.answer = converted(lambda obj: obj["metadata"].update(name="other"))
    version = custom.list_namespaced_custom_object(
        group, "v2", namespace, "crontabs")["metadata"]["resourceVersion"]
    custom.create_namespaced_custom_object(
        group, "v1", namespace, "crontabs",
        crontab(group, "v1", "one", namespace, {"hostPort": "a:1"}))
    with pytest.raises(ApiException) as raised:
        for event in watch.Watch().stream(custom.list_namespaced_custom_object, group, "v2",
                                          namespace, "crontabs", resource_version=version,
                                          timeout_seconds=30):
            pytest.fail(f"an event the webhook could not convert was sent: {event}")
    assert raised.value.status == 500
    assert raised.value.reason == (
        f"InternalError: Internal error occurred: conversion webhook for {group}/v1, "
        "Kind=CronTab returned invalid object: must have the same name: one != other")


@pytest.mark.parametrize(("conversion", "message"), [
    ({"strategy": "Webhook"},
     "spec.conversion.webhookClientConfig: Required value: required when strategy is set "
     "to Webhook"),
    ({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://h/c"}}},
     "spec.conversion.conversionReviewVersions: Required value"),
    ({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://h/c"},
                                         "conversionReviewVersions": ["v2"]}},
     "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v2\"}: must "
     "include at least one of v1, v1beta1"),
    ({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://h/c"},
                                         "conversionReviewVersions": ["v1"]}},
     "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the "
     "only allowed URL scheme"),
    ({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"],
                                      "clientConfig": {"url": "https://h/c"}}},
     "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is "
     "not set to Webhook"),
])
def test_a_bad_conversion_is_refused_with_upstreams_message(
        kubectl: Any, conversion: dict[str, Any], message: str) -> None:
    crd = example_crd(unique_group(), {"url": "https://h/c"})
    crd["spec"]["conversion"] = copy.deepcopy(conversion)
    refused = kubectl("create", "--validate=false", "-f", "-", input=json.dumps(crd),
                      check=False)
    assert refused.returncode == 1
    assert message in refused.stderr


# -- crd_selectable_fields.go ----------------------------------------------------------------

class EventNames:
    """A watch's ADDED and DELETED object names, read by a thread until closed (upstream's
    watchAccumulator)."""

    def __init__(self, base: str, path: str, selector: str) -> None:
        self.added: set[str] = set()
        self.deleted: set[str] = set()
        host, _, port = base.removeprefix("http://").partition(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=60)
        self.connection.request("GET", f"{path}?watch=true&fieldSelector={selector}")
        self.response = self.connection.getresponse()
        assert self.response.status == 200, self.response.read()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with contextlib.suppress(OSError, ValueError, http.client.HTTPException):
            for line in self.response:
                event = json.loads(line)
                name = event["object"]["metadata"]["name"]
                if event["type"] == "ADDED":
                    self.added.add(name)
                elif event["type"] == "DELETED":
                    self.deleted.add(name)

    def seen(self) -> tuple[set[str], set[str]]:
        return set(self.added), set(self.deleted)

    def close(self) -> None:
        """End the stream (the reading thread sees its end), then close the connection."""
        with contextlib.suppress(OSError):
            self.connection.sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]
        self.thread.join(timeout=10)
        self.connection.close()


def test_list_and_watch_custom_resources_matching_the_field_selector(
        custom: client.CustomObjectsApi, extensions: client.ApiextensionsV1Api,
        webhook: WebhookProcess, apiserver: Any, namespace: str) -> None:
    """crd_selectable_fields.go: "MUST list and watch custom resources matching the field
    selector", through the example's webhook: v1's selectable field is .spec.hostPort,
    v2's .spec.host and .spec.port (upstream's agnhost converter keeps the same fields at
    the top level; the example converts them under spec). Informers are a client-go
    wrapper of the same list and watch, so the watches stand for them."""
    crd = example_crd(unique_group(), {"url": webhook.url(), "caBundle": webhook.ca_bundle})
    crd["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": ".spec.hostPort"}]
    crd["spec"]["versions"][1]["selectableFields"] = [
        {"jsonPath": ".spec.host"}, {"jsonPath": ".spec.port"}]
    group = install(extensions, custom, crd)
    watches: list[EventNames] = []
    try:
        base = f"/apis/{group}/{{}}/namespaces/{namespace}/crontabs"
        v2_host = EventNames(apiserver.url, base.format("v2"), "spec.host=host1")
        watches.append(v2_host)
        v2_host_port = EventNames(apiserver.url, base.format("v2"),
                                  "spec.host=host1,spec.port=80")
        watches.append(v2_host_port)
        v1_host_port = EventNames(apiserver.url, base.format("v1"), "spec.hostPort=host1:80")
        watches.append(v1_host_port)

        names = [f"selectable-field-cr{uuid.uuid4().hex[:5]}" for _ in range(3)]
        for name, spec in zip(names, ({"host": "host1", "port": "80"},
                                      {"host": "host1", "port": "8080"}, {"host": "host2"}),
                              strict=True):
            custom.create_namespaced_custom_object(
                group, "v2", namespace, "crontabs", crontab(group, "v2", name, namespace, spec))

        def listed(version: str, selector: str) -> set[str]:
            return {o["metadata"]["name"] for o in custom.list_namespaced_custom_object(
                group, version, namespace, "crontabs", field_selector=selector)["items"]}

        assert listed("v2", "spec.host=host1") == {names[0], names[1]}
        assert listed("v2", "spec.host=host1,spec.port=80") == {names[0]}
        assert listed("v1", "spec.hostPort=host1:80") == {names[0]}
        assert listed("v1", "spec.hostPort=host1:8080") == {names[1]}

        for accumulated, added in ((v2_host, {names[0], names[1]}),
                                   (v2_host_port, {names[0]}), (v1_host_port, {names[0]})):
            until(lambda a=accumulated, want=added: a.seen() == (want, set()),
                  f"ADDED {added}")

        custom.delete_collection_namespaced_custom_object(
            group, "v2", namespace, "crontabs", field_selector="spec.host=host1,spec.port=80",
            grace_period_seconds=0)
        moved = custom.get_namespaced_custom_object(group, "v2", namespace, "crontabs",
                                                    names[1])
        moved["spec"]["host"] = "host2"
        custom.replace_namespaced_custom_object(group, "v2", namespace, "crontabs", names[1],
                                                moved)

        assert listed("v2", "spec.host=host1") == set()
        assert listed("v2", "spec.host=host1,spec.port=80") == set()
        for accumulated, both in ((v2_host, {names[0], names[1]}),
                                  (v2_host_port, {names[0]}), (v1_host_port, {names[0]})):
            until(lambda a=accumulated, want=both: a.seen() == (want, want),
                  f"ADDED and DELETED {both}")
    finally:
        for accumulated in watches:
            accumulated.close()
        delete_definition(extensions, f"crontabs.{group}")
