"""ValidatingAdmissionPolicy and its bindings: served with upstream's validation (every
CEL expression compiled when the policy is written), and the admission plugin that
applies them, through the real kubectl and the official client, after cases of
upstream's test/e2e/apimachinery/validatingadmissionpolicy.go. The module runs its own
API server: its policies would refuse other modules' requests."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from minikube_py.api import Obj
from minikube_py.cluster.apiserver import APIServerProcess, ServingTLS
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.security import pki
from tests.api_helpers import manifest_yaml, manifests_yaml
from tests.conftest import module_own_apiserver
from tests.test_audit import KUBECTL, events
from tests.test_audit import kubeconfig as tls_kubeconfig

etcd, apiserver, kubeconfig = module_own_apiserver("vap")

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
GROUP = "admissionregistration.k8s.io"
GATEWAY_VAP = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "crds"
               / "gateway-api" / "gateway.networking.k8s.io_vap_safeupgrades.yaml")
if not GATEWAY_VAP.exists():
    GATEWAY_VAP = Path("/work/shared/data/crds/gateway-api/"
                       "gateway.networking.k8s.io_vap_safeupgrades.yaml")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def policy(name: str, validations: list[Obj], **spec: Any) -> Obj:
    """A policy on Deployments (CREATE, UPDATE)."""
    return {"apiVersion": f"{GROUP}/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
                "validations": validations, **spec}}


def binding(name: str, policy_name: str, namespace: str, actions: list[str]) -> Obj:
    """A binding of the policy to one namespace (selected by its name label)."""
    return {"apiVersion": f"{GROUP}/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": policy_name, "validationActions": actions,
                     "matchResources": {"namespaceSelector": {"matchLabels": {
                         "kubernetes.io/metadata.name": namespace}}}}}


def deployment(name: str, replicas: int, **labels: str) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "pause"}]}}}}


@pytest.fixture
def applied(kubectl: Kubectl) -> Iterator[Callable[..., None]]:
    """kubectl apply objects; every one is deleted after the test."""
    made: list[tuple[str, str]] = []

    def apply(*objects: Obj) -> None:
        kubectl("apply", "-f", "-", input=manifests_yaml(objects))
        made.extend((obj["kind"], obj["metadata"]["name"]) for obj in objects)

    yield apply
    for kind, name in reversed(made):
        kubectl("delete", kind.lower(), name, "--ignore-not-found")


def eventually(kubectl: Kubectl, args: tuple[str, ...], manifest: Obj,
               done: Callable[[subprocess.CompletedProcess[str]], bool]
               ) -> subprocess.CompletedProcess[str]:
    """Run a server-side dry-run kubectl command until `done` holds (the plugin reads
    policies from the watch cache, so a new one applies within moments)."""
    deadline = time.monotonic() + 30
    while True:
        result = kubectl(*args, "--dry-run=server", "-f", "-", input=manifest_yaml(manifest),
                         check=False)
        if done(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


def refused(result: subprocess.CompletedProcess[str]) -> bool:
    return result.returncode != 0


# --- the kinds -------------------------------------------------------------------------------

def test_a_policy_with_an_expression_that_does_not_compile_is_refused(kubectl: Kubectl) -> None:
    bad = policy(unique("bad"), [{"expression": "object.spec.replicas >"}])
    result = kubectl("apply", "-f", "-", input=manifest_yaml(bad), check=False)
    assert result.returncode != 0
    assert ('spec.validations[0].expression: Invalid value: "object.spec.replicas >": '
            "compilation failed: ERROR: <input>:1:23: Syntax error:") in result.stderr
    wrong_type = policy(unique("int"), [{"expression": "1 + 1"}])
    result = kubectl("apply", "-f", "-", input=manifest_yaml(wrong_type), check=False)
    assert ('spec.validations[0].expression: Invalid value: "1 + 1": must evaluate to bool '
            "but got int") in result.stderr
    empty = policy(unique("empty"), [])
    result = kubectl("apply", "-f", "-", input=manifest_yaml(empty), check=False)
    assert ("spec.validations: Required value: validations or auditAnnotations must contain "
            "at least one item") in result.stderr


def test_a_binding_needs_its_actions_and_not_both_deny_and_warn(kubectl: Kubectl) -> None:
    both = binding(unique("both"), "p", "default", ["Deny", "Warn"])
    result = kubectl("apply", "-f", "-", input=manifest_yaml(both), check=False)
    assert "spec.validationActions: Invalid value:" in result.stderr
    assert "must not contain both Deny and Warn" in result.stderr
    none = binding(unique("none"), "p", "default", [])
    result = kubectl("apply", "-f", "-", input=manifest_yaml(none), check=False)
    assert "spec.validationActions: Required value" in result.stderr
    odd = binding(unique("odd"), "p", "default", ["Block"])
    result = kubectl("apply", "-f", "-", input=manifest_yaml(odd), check=False)
    assert ('spec.validationActions[0]: Unsupported value: "Block": supported values: '
            '"Audit", "Deny", "Warn"') in result.stderr


def test_kubectl_serves_both_kinds_with_defaults(kubectl: Kubectl,
                                                 applied: Callable[..., None]) -> None:
    name = unique("replicas")
    applied(policy(name, [{"expression": "object.spec.replicas < 10"}]),
            binding(name, name, "default", ["Deny"]))
    stored = json.loads(kubectl("get", "validatingadmissionpolicy", name, "-o", "json").stdout)
    assert stored["spec"]["failurePolicy"] == "Fail"
    assert stored["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"
    assert stored["spec"]["matchConstraints"]["resourceRules"][0]["scope"] == "*"
    rows = [line.split() for line in kubectl("api-resources").stdout.splitlines()[1:]]
    assert ["validatingadmissionpolicies", f"{GROUP}/v1", "false",
            "ValidatingAdmissionPolicy"] in rows
    assert ["validatingadmissionpolicybindings", f"{GROUP}/v1", "false",
            "ValidatingAdmissionPolicyBinding"] in rows
    explained = kubectl("explain", "validatingadmissionpolicy.spec.validations").stdout
    assert "expression\t<string> -required-" in explained
    table = kubectl("get", "validatingadmissionpolicies", name).stdout.splitlines()
    assert table[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    assert table[1].split()[:3] == [name, "1", "<unset>"]
    table = kubectl("get", "validatingadmissionpolicybindings", name).stdout.splitlines()
    assert table[0].split() == ["NAME", "POLICYNAME", "PARAMREF", "AGE"]
    assert table[1].split()[:3] == [name, name, "<unset>"]


def test_the_official_client_reads_and_writes_both_kinds(kubeconfig: Path) -> None:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        admission = client.AdmissionregistrationV1Api(api)
        name = unique("official")
        admission.create_validating_admission_policy(policy(name, [{"expression": "true"}]))
        bound = binding(name, name, "default", ["Warn", "Audit"])
        bound["spec"]["paramRef"] = {"selector": {"matchLabels": {"tier": "gold"}},
                                     "parameterNotFoundAction": "Allow"}
        admission.create_validating_admission_policy_binding(bound)
        read = admission.read_validating_admission_policy(name)
        assert read.spec.validations[0].expression == "true"
        assert read.spec.failure_policy == "Fail"
        listed = admission.list_validating_admission_policy_binding()
        mine = [b for b in listed.items if b.metadata.name == name]
        assert mine[0].spec.validation_actions == ["Warn", "Audit"]
        assert mine[0].spec.param_ref.selector.match_labels == {"tier": "gold"}
        with pytest.raises(ApiException) as caught:
            admission.create_validating_admission_policy(
                policy(unique("bad"), [{"expression": "object.spec.replicas >"}]))
        assert caught.value.status == 422
        assert json.loads(caught.value.body)["details"]["causes"][0]["field"] == (
            "spec.validations[0].expression")
        admission.delete_validating_admission_policy_binding(name)
        admission.delete_validating_admission_policy(name)
    finally:
        api.close()


# --- admission -------------------------------------------------------------------------------

def test_deny_refuses_a_deployment_with_upstreams_message_and_422(
        kubectl: Kubectl, applied: Callable[..., None], namespace: str,
        kubeconfig: Path) -> None:
    """e2e "should validate against a Deployment": replicas checked, the binding selects
    the namespace, a matchCondition exempts labelled objects."""
    name = unique("replicas")
    applied(policy(name, [{"expression": "object.spec.replicas > 1"},
                          {"expression": "variables.replicas < 100",
                           "messageExpression": "'wants ' + string(variables.replicas)",
                           "reason": "Forbidden"}],
                   variables=[{"name": "replicas", "expression": "object.spec.replicas"}],
                   matchConditions=[{"name": "not-exempt", "expression":
                                     "!has(object.metadata.labels) || "
                                     "!('exempt' in object.metadata.labels)"}]),
            binding(name, name, namespace, ["Deny"]))
    one = deployment("one", 1)
    result = eventually(kubectl, ("create", "-n", namespace), one, refused)
    assert result.returncode != 0
    # kubectl words a 422 by its causes, as it does upstream
    assert (f'The deployments "one" is invalid: : ValidatingAdmissionPolicy \'{name}\' with '
            f"binding '{name}' denied request: failed expression: object.spec.replicas > 1"
            in result.stderr)
    kubectl("create", "-n", namespace, "--dry-run=server", "-f", "-",
            input=manifest_yaml(deployment("exempt", 1, exempt="yes")))
    kubectl("create", "-n", namespace, "--dry-run=server", "-f", "-",
            input=manifest_yaml(deployment("two", 2)))

    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        with pytest.raises(ApiException) as caught:
            client.AppsV1Api(api).create_namespaced_deployment(namespace, deployment("one", 1))
        assert caught.value.status == 422
        status = json.loads(caught.value.body)
        assert status["reason"] == "Invalid"
        message = (f"ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: "
                   "failed expression: object.spec.replicas > 1")
        assert status["message"] == f'deployments.apps "one" is forbidden: {message}'
        assert status["details"]["causes"] == [{"message": message}]
        with pytest.raises(ApiException) as caught:
            client.AppsV1Api(api).create_namespaced_deployment(namespace,
                                                                deployment("many", 200))
        assert caught.value.status == 403
        assert json.loads(caught.value.body)["message"].endswith("denied request: wants 200")
    finally:
        api.close()


def test_warn_admits_with_a_warning(kubectl: Kubectl, applied: Callable[..., None],
                                    namespace: str) -> None:
    name = unique("warn")
    applied(policy(name, [{"expression": "object.spec.replicas > 1",
                           "message": "one replica is not highly available"}]),
            binding(name, name, namespace, ["Warn"]))
    result = eventually(kubectl, ("create", "-n", namespace), deployment("one", 1),
                        lambda r: "Warning:" in r.stderr)
    assert result.returncode == 0
    assert (f"Warning: Validation failed for ValidatingAdmissionPolicy '{name}' with binding "
            f"'{name}': one replica is not highly available") in result.stderr


def test_failure_policy_decides_what_an_evaluation_error_does(
        kubectl: Kubectl, applied: Callable[..., None], namespace: str) -> None:
    failing, ignoring = unique("fail"), unique("ignore")
    missing = [{"expression": "object.spec.missing == 'x'"}]
    applied(policy(ignoring, missing, failurePolicy="Ignore"),
            binding(ignoring, ignoring, namespace, ["Deny"]))
    applied(policy(failing, missing),
            binding(failing, failing, namespace, ["Deny"]))
    result = eventually(kubectl, ("create", "-n", namespace), deployment("one", 1), refused)
    assert (f"ValidatingAdmissionPolicy '{failing}' with binding '{failing}' denied request: "
            "expression 'object.spec.missing == 'x'' resulted in error: no such key: missing"
            in result.stderr)
    kubectl("delete", "validatingadmissionpolicybinding", failing)
    result = eventually(kubectl, ("create", "-n", namespace), deployment("one", 1),
                        lambda r: r.returncode == 0)
    assert result.returncode == 0, result.stderr


def _annotated(name: str, text: str) -> Obj:
    """A deployment whose annotation `big` holds `text`."""
    made = deployment(name, 1)
    made["metadata"]["annotations"] = {"big": text}
    return made


def test_an_expression_over_the_per_call_cost_limit_is_an_error(
        kubectl: Kubectl, applied: Callable[..., None], namespace: str) -> None:
    """An expression whose cost on this object passes 1,000,000 (a 100,000-character
    string searched for a 1,100-character one: 10,000 x 110) fails as cel-go's
    interrupted evaluation does; on a short string it runs."""
    name = unique("percall")
    expression = f"!object.metadata.annotations.big.contains('{'b' * 1100}')"
    applied(policy(name, [{"expression": expression}]),
            binding(name, name, namespace, ["Deny"]))
    result = eventually(kubectl, ("create", "-n", namespace),
                        _annotated("long", "a" * 100_000), refused)
    assert (f"ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: "
            f"expression '{expression}' resulted in error: operation cancelled: actual cost "
            "limit exceeded" in result.stderr)
    kubectl("create", "-n", namespace, "--dry-run=server", "-f", "-",
            input=manifest_yaml(_annotated("short", "a" * 1000)))


def test_the_policys_expressions_share_one_cost_budget(
        kubectl: Kubectl, applied: Callable[..., None], namespace: str) -> None:
    """Each validation costs about 400,000 on this object (under the per-call limit); 30
    of them pass the 10,000,000 one evaluation may spend, and the one that would is
    refused with upstream's words, no further validation running."""
    name = unique("budget")
    validations = [{"expression": f"!object.metadata.annotations.big.contains("
                                  f"'{'b' * 400}{n}')"} for n in range(30)]
    applied(policy(name, validations), binding(name, name, namespace, ["Deny"]))
    result = eventually(kubectl, ("create", "-n", namespace),
                        _annotated("long", "a" * 100_000), refused)
    assert (f"ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: "
            "validation failed due to running out of cost budget, no further validation "
            "rules will be run" in result.stderr)
    kubectl("create", "-n", namespace, "--dry-run=server", "-f", "-",
            input=manifest_yaml(_annotated("short", "a" * 1000)))


# --- the Gateway API's policy ---------------------------------------------------------------

def gateway_crd(bundle_version: str, channel: str) -> Obj:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.gateway.networking.k8s.io", "annotations": {
                "gateway.networking.k8s.io/bundle-version": bundle_version,
                "gateway.networking.k8s.io/channel": channel}},
            "spec": {"group": "gateway.networking.k8s.io", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                               "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}}


def test_gateway_apis_safe_upgrades_policy_refuses_old_bundles(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", str(GATEWAY_VAP))
    try:
        old = gateway_crd("v1.4.0", "standard")
        result = eventually(kubectl, ("create",), old, refused)
        assert ("Installing CRDs with version before v1.5.0 is prohibited by default."
                in result.stderr)
        assert ("ValidatingAdmissionPolicy 'safe-upgrades.gateway.networking.k8s.io' with "
                "binding 'safe-upgrades.gateway.networking.k8s.io' denied request"
                in result.stderr)
        kubectl("create", "--dry-run=server", "-f", "-",
                input=manifest_yaml(gateway_crd("v1.6.1", "standard")))
        other = gateway_crd("v1.4.0", "standard")
        other["metadata"]["name"] = "widgets.example.com"
        other["spec"]["group"] = "example.com"
        kubectl("create", "--dry-run=server", "-f", "-", input=manifest_yaml(other))
    finally:
        kubectl("delete", "-f", str(GATEWAY_VAP), "--ignore-not-found")


def test_params_come_from_the_object_the_binding_names(
        kubectl: Kubectl, applied: Callable[..., None], namespace: str) -> None:
    """A ConfigMap parameterizes the policy; none found with parameterNotFoundAction Deny
    refuses every request."""
    name = unique("limits")
    limited = policy(name, [{"expression":
                             "object.spec.replicas <= int(params.data.maxReplicas)",
                             "messageExpression": "'at most ' + params.data.maxReplicas"}],
                     paramKind={"apiVersion": "v1", "kind": "ConfigMap"})
    bound = binding(name, name, namespace, ["Deny"])
    bound["spec"]["paramRef"] = {"name": "limits", "namespace": namespace,
                                 "parameterNotFoundAction": "Deny"}
    applied(limited, bound)
    result = eventually(kubectl, ("create", "-n", namespace), deployment("two", 2), refused)
    assert (f"ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: no "
            "params found for policy binding with `Deny` parameterNotFoundAction"
            in result.stderr)
    kubectl("create", "configmap", "limits", "-n", namespace, "--from-literal=maxReplicas=3")
    result = eventually(kubectl, ("create", "-n", namespace), deployment("two", 2),
                        lambda r: r.returncode == 0)
    assert result.returncode == 0, result.stderr
    result = kubectl("create", "-n", namespace, "--dry-run=server", "-f", "-",
                     input=manifest_yaml(deployment("five", 5)), check=False)
    assert f"binding '{name}' denied request: at most 3" in result.stderr


Run = Callable[..., subprocess.CompletedProcess[str]]


@contextlib.asynccontextmanager
async def tls_apiserver(etcd: EtcdProcess, tmp_path: Path, *extra: str
                        ) -> AsyncIterator[Run]:
    """An API server over TLS with an audit log (tmp_path/audit.log, every request at
    Metadata) and RBAC; yields kubectl as a system:masters admin."""
    audit_policy = tmp_path / "policy.yaml"
    audit_policy.write_text(yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                                            "rules": [{"level": "Metadata"}]}))
    ca = pki.new_ca()
    cert, key = pki.issue(ca, "kube-apiserver", ip_addresses=("127.0.0.1",),
                          server=True).write(tmp_path, "apiserver")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    async with APIServerProcess(
            [etcd.client_url], tmp_path / "api.log",
            tls=ServingTLS(cert, key, tmp_path / "ca.crt"), extra_args=(
                f"--audit-policy-file={audit_policy}",
                f"--audit-log-path={tmp_path / 'audit.log'}", "--authorization-mode=RBAC",
                "--disable-admission-plugins=ServiceAccount", *extra)) as api:
        admin = tls_kubeconfig(tmp_path / "admin", api.url, ca, pki.issue(
            ca, "admin", organizations=("system:masters",), client=True))

        def run(*args: str, input: str | None = None, check: bool = True
                ) -> subprocess.CompletedProcess[str]:
            result = subprocess.run([KUBECTL, f"--kubeconfig={admin}", *args], input=input,
                                    capture_output=True, text=True, timeout=60)
            assert not check or result.returncode == 0, result.stderr
            return result

        yield run


async def test_audit_records_failures_and_audit_annotations_in_the_audit_log(
        private_etcd: EtcdProcess, tmp_path: Path) -> None:
    """An Audit binding admits the request; its audit event carries the failure and the
    policy's auditAnnotations (e2e "should support auditAnnotations" in spirit)."""
    log = tmp_path / "audit.log"
    async with tls_apiserver(private_etcd, tmp_path) as run:
        audited = policy("audited", [{"expression": "object.spec.replicas > 1",
                                      "message": "one is too few"}],
                         auditAnnotations=[{"key": "replicas", "valueExpression":
                                            "string(object.spec.replicas)"}])
        run("apply", "-f", "-", input=manifests_yaml(
            [audited, binding("audited", "audited", "default", ["Audit"])]))
        deadline = time.monotonic() + 30

        def annotations() -> dict[str, str]:
            """The annotations of the Deployment's create, once the log has it."""
            for event in events(log):
                if (event["verb"] == "create" and event["stage"] == "ResponseComplete"
                        and event.get("objectRef", {}).get("resource") == "deployments"
                        and "audited/replicas" in event.get("annotations", {})):
                    return dict(event["annotations"])
            return {}

        found: dict[str, str] = {}
        while not found:
            assert time.monotonic() < deadline, events(log)
            run("create", "-n", "default", "--dry-run=server", "-f", "-",
                input=manifest_yaml(deployment("one", 1)))
            time.sleep(0.2)
            found = annotations()
    assert found["audited/replicas"] == "1"
    assert json.loads(found["validation.policy.admission.k8s.io/validation_failure"]) == [
        {"message": "one is too few", "policy": "audited", "binding": "audited",
         "expressionIndex": 0, "validationActions": ["Audit"]}]


async def test_authorizer_asks_the_servers_authorizer(private_etcd: EtcdProcess,
                                                      tmp_path: Path) -> None:
    """`authorizer` in a validation: RBAC answers for the request's user (an admin) and for
    a service account that no role names."""
    async with tls_apiserver(private_etcd, tmp_path) as run:
        checks = policy("authz", [
            {"expression": "authorizer.requestResource.check('create').allowed()",
             "message": "the requester may not create it"},
            {"expression": "!has(object.metadata.labels) || !('as-robot' in "
                           "object.metadata.labels) || authorizer.serviceAccount('default', "
                           "'robot').group('apps').resource('deployments')"
                           ".namespace('default').check('create').allowed()",
             "message": "robot may not create deployments"}])
        run("apply", "-f", "-", input=manifests_yaml(
            [checks, binding("authz", "authz", "default", ["Deny"])]))
        deadline = time.monotonic() + 30
        while True:
            result = run("create", "-n", "default", "--dry-run=server", "-f", "-",
                         input=manifest_yaml(deployment("robot", 1, **{"as-robot": "robot"})),
                         check=False)
            if result.returncode != 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert ("ValidatingAdmissionPolicy 'authz' with binding 'authz' denied request: "
                "robot may not create deployments") in result.stderr
        run("create", "-n", "default", "--dry-run=server", "-f", "-",
            input=manifest_yaml(deployment("admin", 1)))


def test_a_webhooks_match_condition_must_compile_too(kubectl: Kubectl) -> None:
    configuration = {
        "apiVersion": f"{GROUP}/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": unique("conditions")},
        "webhooks": [{"name": "check.example.com", "sideEffects": "None",
                      "admissionReviewVersions": ["v1"],
                      "clientConfig": {"url": "https://hooks.example.com/check"},
                      "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"],
                                 "apiVersions": ["v1"], "resources": ["widgets"]}],
                      "matchConditions": [{"name": "odd", "expression": "'x'"}]}]}
    result = kubectl("apply", "-f", "-", input=manifest_yaml(configuration), check=False)
    assert ("webhooks[0].matchConditions[0].expression: Invalid value: \"'x'\": must "
            "evaluate to bool but got string") in result.stderr


def test_match_policy_equivalent_matches_another_version_of_the_resource(
        kubectl: Kubectl, applied: Callable[..., None], namespace: str) -> None:
    """A rule for v1 of a custom resource also catches a v1beta1 request, unless the
    policy's matchPolicy is Exact."""
    group = f"{unique('eq')}.example.com"
    definition = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget",
                           "listKind": "GadgetList"},
                 "versions": [{"name": version, "served": True, "storage": version == "v1",
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}
                              for version in ("v1", "v1beta1")]}}
    applied(definition)
    kubectl("wait", "--for=condition=Established", f"crd/gadgets.{group}")
    name = unique("gadgets")
    rule = {"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE"],
            "resources": ["gadgets"]}
    gadgets = policy(name, [{"expression": "false", "message": "no gadgets"}])
    gadgets["spec"]["matchConstraints"]["resourceRules"] = [rule]
    applied(gadgets, binding(name, name, namespace, ["Deny"]))
    beta = {"apiVersion": f"{group}/v1beta1", "kind": "Gadget", "metadata": {"name": "g"}}
    result = eventually(kubectl, ("create", "-n", namespace), beta, refused)
    assert f"ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: " \
           "no gadgets" in result.stderr
    gadgets["spec"]["matchConstraints"]["matchPolicy"] = "Exact"
    applied(gadgets)
    result = eventually(kubectl, ("create", "-n", namespace), beta,
                        lambda r: r.returncode == 0)
    assert result.returncode == 0, result.stderr
