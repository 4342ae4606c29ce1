"""admissionregistration.k8s.io/v1: ValidatingWebhookConfiguration and
MutatingWebhookConfiguration, stored and served as upstream does (defaults, validation,
generation, tables, discovery, explain, protobuf bodies), through kubectl, the official
Python client and plain HTTP."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes import client, config

from minikube_py.api import Obj, protobuf
from minikube_py.apiserver.storage.etcd import EtcdClient
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.gen.k8s import admissionregistration_v1_pb2, meta_v1_pb2, runtime_pb2
from tests.api_helpers import API, manifests_yaml

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

GROUP = "admissionregistration.k8s.io"
PREFIX = f"/apis/{GROUP}/v1"
# Configurations here go to the shared API server, where other tests create pods and
# ConfigMaps at the same time: their webhooks (which no server answers, failurePolicy
# Fail) are for a resource nothing serves, so they never refuse another test's request.
POD_RULE = {"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.com"],
            "apiVersions": ["v1"], "resources": ["widgets"]}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def webhook(name: str = "check.example.com", **fields: Any) -> Obj:
    """A valid webhook with only what v1 requires (and one rule)."""
    return {"name": name, "clientConfig": {"service": {"namespace": "default",
                                                       "name": "hooks", "path": "/check"}},
            "rules": [POD_RULE], "sideEffects": "None", "admissionReviewVersions": ["v1"],
            **fields}


def configuration(kind: str, name: str, *webhooks: Obj) -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": list(webhooks)}


def plural(kind: str) -> str:
    return kind.lower() + "s"


@pytest.fixture
async def api(apiserver: APIServerProcess) -> AsyncIterator[API]:
    async with aiohttp.ClientSession() as session:
        yield API(session, apiserver.url)


@pytest.fixture
def official(kubeconfig: Path) -> Iterator[client.AdmissionregistrationV1Api]:
    """The official client's AdmissionregistrationV1Api on the test kubeconfig."""
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.AdmissionregistrationV1Api(api_client)
    api_client.close()


# --- kubectl ---------------------------------------------------------------------------------

def test_kubectl_apply_then_get_counts_webhooks_and_shows_the_defaults(kubectl: Kubectl) -> None:
    validating, mutating = unique("policy"), unique("inject")
    manifests = [
        configuration("ValidatingWebhookConfiguration", validating, webhook(),
                      webhook("audit.example.com", clientConfig={
                          "url": "https://hooks.example.com:8443/audit"})),
        configuration("MutatingWebhookConfiguration", mutating, webhook("inject.example.com")),
    ]
    applied = kubectl("apply", "-f", "-", input=manifests_yaml(manifests)).stdout
    assert f"validatingwebhookconfiguration.{GROUP}/{validating} created" in applied
    assert f"mutatingwebhookconfiguration.{GROUP}/{mutating} created" in applied

    table = kubectl("get", "validatingwebhookconfigurations", validating).stdout.splitlines()
    assert table[0].split() == ["NAME", "WEBHOOKS", "AGE"]
    assert table[1].split()[:2] == [validating, "2"]
    table = kubectl("get", "mutatingwebhookconfigurations", mutating).stdout.splitlines()
    assert table[1].split()[:2] == [mutating, "1"]

    stored = json.loads(kubectl("get", "validatingwebhookconfiguration", validating,
                                "-o", "json").stdout)
    assert stored["metadata"]["generation"] == 1
    first, second = stored["webhooks"]
    assert first["failurePolicy"] == "Fail" and first["matchPolicy"] == "Equivalent"
    assert first["namespaceSelector"] == {} and first["objectSelector"] == {}
    assert first["timeoutSeconds"] == 10
    assert first["rules"][0]["scope"] == "*"
    assert first["clientConfig"]["service"]["port"] == 443
    assert "reinvocationPolicy" not in first  # only mutating webhooks have one
    assert second["clientConfig"] == {"url": "https://hooks.example.com:8443/audit"}
    mutated = json.loads(kubectl("get", "mutatingwebhookconfiguration", mutating,
                                 "-o", "json").stdout)
    assert mutated["webhooks"][0]["reinvocationPolicy"] == "Never"
    kubectl("delete", "validatingwebhookconfiguration", validating)
    kubectl("delete", "mutatingwebhookconfiguration", mutating)


def test_api_resources_lists_both_kinds_cluster_scoped(kubectl: Kubectl) -> None:
    rows = [line.split() for line in kubectl("api-resources").stdout.splitlines()[1:]]
    assert ["mutatingwebhookconfigurations", f"{GROUP}/v1", "false",
            "MutatingWebhookConfiguration"] in rows
    assert ["validatingwebhookconfigurations", f"{GROUP}/v1", "false",
            "ValidatingWebhookConfiguration"] in rows
    assert f"{GROUP}/v1" in kubectl("api-versions").stdout.split()


def test_explain_describes_a_webhook_and_its_required_fields(kubectl: Kubectl) -> None:
    output = kubectl("explain", "validatingwebhookconfiguration.webhooks").stdout
    assert "KIND:       ValidatingWebhookConfiguration" in output
    assert f"GROUP:      {GROUP}" in output
    assert "sideEffects\t<string> -required-" in output
    assert "admissionReviewVersions\t<[]string> -required-" in output
    output = kubectl("explain", "mutatingwebhookconfiguration.webhooks.clientConfig.service").stdout
    assert "port\t<integer>" in output and "name\t<string> -required-" in output
    output = kubectl("explain", "mutatingwebhookconfiguration.webhooks").stdout
    assert "reinvocationPolicy\t<string>" in output


def test_kubectl_create_of_an_invalid_configuration_prints_the_webhook_path(
        kubectl: Kubectl) -> None:
    name = unique("bad")
    manifest = configuration("ValidatingWebhookConfiguration", name,
                             webhook("two.segments"))
    result = kubectl("create", "-f", "-", input=json.dumps(manifest), check=False)
    assert result.returncode == 1
    assert (f'The ValidatingWebhookConfiguration "{name}" is invalid: webhooks[0].name: '
            'Invalid value: "two.segments": should be a domain with at least three segments '
            "separated by dots") in result.stderr
    missing = kubectl("get", "validatingwebhookconfiguration", name, check=False)
    assert "NotFound" in missing.stderr


def test_strategic_merge_patch_merges_webhooks_by_name_and_bumps_generation(
        kubectl: Kubectl) -> None:
    name = unique("merge")
    kubectl("create", "-f", "-", input=json.dumps(
        configuration("MutatingWebhookConfiguration", name, webhook("a.example.com"))))
    patch = {"webhooks": [{"name": "a.example.com", "timeoutSeconds": 5},
                          webhook("b.example.com")]}
    kubectl("patch", "mutatingwebhookconfiguration", name, "--type=strategic",
            "-p", json.dumps(patch))
    stored = json.loads(kubectl("get", "mutatingwebhookconfiguration", name,
                                "-o", "json").stdout)
    assert [(w["name"], w["timeoutSeconds"]) for w in stored["webhooks"]] == [
        ("a.example.com", 5), ("b.example.com", 10)]
    assert stored["metadata"]["generation"] == 2
    kubectl("delete", "mutatingwebhookconfiguration", name)


# --- the official Python client --------------------------------------------------------------

def test_official_client_creates_reads_and_lists_both_kinds(
        official: client.AdmissionregistrationV1Api) -> None:
    validating, mutating = unique("py-check"), unique("py-inject")
    rule = client.V1RuleWithOperations(operations=["CREATE"], api_groups=["apps"],
                                       api_versions=["v1"], resources=["deployments"])
    service = client.AdmissionregistrationV1ServiceReference(namespace="default", name="hooks")
    official.create_validating_webhook_configuration(client.V1ValidatingWebhookConfiguration(
        metadata=client.V1ObjectMeta(name=validating),
        webhooks=[client.V1ValidatingWebhook(
            name="check.example.com", side_effects="None", admission_review_versions=["v1"],
            client_config=client.AdmissionregistrationV1WebhookClientConfig(service=service),
            rules=[rule],
            match_conditions=[client.V1MatchCondition(name="not-system",
                                                      expression="true")])]))
    official.create_mutating_webhook_configuration(client.V1MutatingWebhookConfiguration(
        metadata=client.V1ObjectMeta(name=mutating),
        webhooks=[client.V1MutatingWebhook(
            name="inject.example.com", side_effects="NoneOnDryRun",
            admission_review_versions=["v1", "v1beta1"], reinvocation_policy="IfNeeded",
            client_config=client.AdmissionregistrationV1WebhookClientConfig(
                url="https://hooks.example.com/inject", ca_bundle="UEVN"))]))

    read = official.read_validating_webhook_configuration(validating)
    hook = read.webhooks[0]
    assert (hook.failure_policy, hook.timeout_seconds, hook.client_config.service.port) == (
        "Fail", 10, 443)
    assert hook.rules[0].scope == "*"
    assert hook.match_conditions[0].name == "not-system"
    listed = official.list_mutating_webhook_configuration()
    found = next(item for item in listed.items if item.metadata.name == mutating)
    assert found.webhooks[0].reinvocation_policy == "IfNeeded"
    assert found.webhooks[0].client_config.ca_bundle == "UEVN"
    assert found.metadata.generation == 1

    official.delete_validating_webhook_configuration(validating)
    official.delete_mutating_webhook_configuration(mutating)


# --- validation -------------------------------------------------------------------------------

INVALID = [
    pytest.param(webhook("two.segments"), "webhooks[0].name",
                 'Invalid value: "two.segments": should be a domain with at least three '
                 "segments separated by dots", id="two-segment-name"),
    pytest.param(webhook(clientConfig={"url": "https://hooks.example.com/x",
                                       "service": {"namespace": "default", "name": "hooks"}}),
                 "webhooks[0].clientConfig",
                 "Required value: exactly one of url or service is required",
                 id="url-and-service"),
    pytest.param(webhook(clientConfig={"url": "http://hooks.example.com/x"}),
                 "webhooks[0].clientConfig.url",
                 "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired "
                 "format: https://host[/path]", id="http-url"),
    pytest.param({k: v for k, v in webhook().items() if k != "sideEffects"},
                 "webhooks[0].sideEffects",
                 "Required value: must specify one of None, NoneOnDryRun",
                 id="missing-side-effects"),
    pytest.param(webhook(timeoutSeconds=31), "webhooks[0].timeoutSeconds",
                 "Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                 id="timeout-31"),
    pytest.param(webhook(rules=[{**POD_RULE, "operations": ["PATCH"]}]),
                 "webhooks[0].rules[0].operations[0]",
                 'Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", '
                 '"DELETE", "UPDATE"', id="bad-operation"),
    pytest.param(webhook(admissionReviewVersions=["v2"]),
                 "webhooks[0].admissionReviewVersions",
                 'Invalid value: []string{"v2"}: must include at least one of v1, v1beta1',
                 id="unknown-review-version"),
    pytest.param(webhook(sideEffects="Some"), "webhooks[0].sideEffects",
                 'Unsupported value: "Some": supported values: "None", "NoneOnDryRun"',
                 id="side-effects-some"),
    pytest.param(webhook(clientConfig={"service": {"namespace": "default", "name": "hooks",
                                                   "path": "check"}}),
                 "webhooks[0].clientConfig.service.path",
                 "Invalid value: \"check\": must start with a '/'", id="relative-path"),
]


@pytest.mark.parametrize("kind", ["ValidatingWebhookConfiguration",
                                  "MutatingWebhookConfiguration"])
@pytest.mark.parametrize(("hook", "field", "message"), INVALID)
async def test_invalid_webhook_is_422_with_the_upstream_field_path_and_not_stored(
        api: API, kind: str, hook: Obj, field: str, message: str) -> None:
    name = unique("invalid")
    status, body = await api.post(f"{PREFIX}/{plural(kind)}", configuration(kind, name, hook))
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert (body["details"]["group"], body["details"]["kind"]) == (GROUP, kind)
    assert {"field": field, "message": message} in [
        {"field": cause["field"], "message": cause["message"]}
        for cause in body["details"]["causes"]]
    status, _ = await api.get(f"{PREFIX}/{plural(kind)}/{name}")
    assert status == 404


async def test_duplicate_webhook_names_are_refused(api: API) -> None:
    kind = "ValidatingWebhookConfiguration"
    status, body = await api.post(f"{PREFIX}/{plural(kind)}", configuration(
        kind, unique("twice"), webhook(), webhook()))
    assert status == 422
    assert [cause["field"] for cause in body["details"]["causes"]] == ["webhooks[1].name"]
    assert body["details"]["causes"][0]["reason"] == "FieldValueDuplicate"


async def test_update_keeps_generation_unless_the_webhooks_change(api: API) -> None:
    kind = "MutatingWebhookConfiguration"
    name = unique("gen")
    path = f"{PREFIX}/{plural(kind)}/{name}"
    status, created = await api.post(f"{PREFIX}/{plural(kind)}",
                                     configuration(kind, name, webhook()))
    assert status == 201 and created["metadata"]["generation"] == 1
    # The same body again, without the defaults the server filled in: no new generation.
    same = configuration(kind, name, webhook())
    same["metadata"]["labels"] = {"team": "a"}
    status, updated = await api.put(path, same)
    assert status == 200 and updated["metadata"]["generation"] == 1
    changed = configuration(kind, name, webhook(failurePolicy="Ignore"))
    status, updated = await api.put(path, changed)
    assert status == 200 and updated["metadata"]["generation"] == 2
    await api.delete(path)


async def test_update_tolerates_side_effects_a_stored_configuration_already_has(
        api: API, etcd_client: EtcdClient) -> None:
    """v1beta1 allowed sideEffects Some; a webhook stored with it can still be updated."""
    kind = "ValidatingWebhookConfiguration"
    name = unique("legacy")
    path = f"{PREFIX}/{plural(kind)}/{name}"
    stored = configuration(kind, name, webhook(sideEffects="Some"))
    stored["metadata"].update(uid=str(uuid.uuid4()), generation=1,
                              creationTimestamp="2026-01-01T00:00:00Z")
    await etcd_client.create(f"/registry/{plural(kind)}/{name}".encode(),
                             json.dumps(stored).encode())
    legacy = configuration(kind, name, webhook(sideEffects="Some", timeoutSeconds=3))
    status, updated = await api.put(path, legacy)
    assert status == 200, updated
    assert updated["webhooks"][0]["timeoutSeconds"] == 3
    assert updated["metadata"]["generation"] == 2
    await api.delete(path)


# --- protobuf ---------------------------------------------------------------------------------

async def test_protobuf_body_creates_a_configuration_read_back_as_json(api: API) -> None:
    """client-go's typed clients send these kinds as protobuf (Rule embedded in
    RuleWithOperations, caBundle as bytes)."""
    name = unique("proto")
    kind = "ValidatingWebhookConfiguration"
    pb = admissionregistration_v1_pb2
    message = pb.ValidatingWebhookConfiguration(
        metadata=meta_v1_pb2.ObjectMeta(name=name),
        webhooks=[pb.ValidatingWebhook(
            name="check.example.com",
            clientConfig=pb.WebhookClientConfig(
                service=pb.ServiceReference(namespace="default", name="hooks", port=8443),
                caBundle=b"PEM"),
            rules=[pb.RuleWithOperations(operations=["DELETE"], rule=pb.Rule(
                apiGroups=["apps"], apiVersions=["v1"], resources=["deployments/scale"],
                scope="Namespaced"))],
            sideEffects="None", admissionReviewVersions=["v1"])])
    body = protobuf.MAGIC + runtime_pb2.Unknown(
        typeMeta=runtime_pb2.TypeMeta(apiVersion=f"{GROUP}/v1", kind=kind),
        raw=message.SerializeToString()).SerializeToString()
    status, created = await api.post(f"{PREFIX}/{plural(kind)}", body,
                                     content_type=protobuf.MEDIA_TYPE)
    assert status == 201, created
    hook = created["webhooks"][0]
    assert hook["clientConfig"] == {"service": {"namespace": "default", "name": "hooks",
                                                "port": 8443}, "caBundle": "UEVN"}
    assert hook["rules"] == [{"operations": ["DELETE"], "apiGroups": ["apps"],
                              "apiVersions": ["v1"], "resources": ["deployments/scale"],
                              "scope": "Namespaced"}]
    assert hook["timeoutSeconds"] == 10
    await api.delete(f"{PREFIX}/{plural(kind)}/{name}")
