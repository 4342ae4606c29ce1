"""Admission webhook configurations are defaulted and validated as upstream's
admissionregistration validation does (the rules the API tests do not reach)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.resources import lookup
from minikube_py.apiserver.registry.strategies import strategy_for
from minikube_py.apiserver.registry.strategies.base import Strategy

GROUP = "admissionregistration.k8s.io"


def strategy(plural: str = "validatingwebhookconfigurations") -> Strategy:
    resource = lookup(GROUP, "v1", plural)
    assert resource is not None
    return strategy_for(resource)


def webhook(**fields: Any) -> Obj:
    return {"name": "check.example.com", "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://hooks.example.com/check"}, **fields}


def configuration(*webhooks: Obj) -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "c", "generation": 1}, "webhooks": list(webhooks)}


def problems(obj: Obj, old: Obj | None = None) -> list[str]:
    """The errors of a create (or of an update from `old`), as upstream prints them."""
    s = strategy()
    obj = copy.deepcopy(obj)
    if old is None:
        s.default(obj)
        return [str(error) for error in s.validate(obj)]
    s.prepare_for_update(obj, old)
    s.default(obj)
    return [str(error) for error in s.validate_update(obj, old)]


def rule(resources: list[str]) -> Obj:
    return {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
            "resources": resources}


@pytest.mark.parametrize("resources", [
    ["*"], ["*/*"], ["pods", "pods/status"], ["*", "*/status"], ["pods/*", "deployments"],
])
def test_resources_without_overlap_are_accepted(resources: list[str]) -> None:
    assert problems(configuration(webhook(rules=[rule(resources)]))) == []


@pytest.mark.parametrize(("resources", "expected"), [
    (["pods/*", "pods/status"], 'webhooks[0].rules[0].resources[1]: Invalid value: '
                                "\"pods/status\": if 'pods/*' is present, must not specify "
                                "pods/status"),
    (["*/status", "pods/status"], 'webhooks[0].rules[0].resources[1]: Invalid value: '
                                  "\"pods/status\": if '*/status' is present, must not "
                                  "specify pods/status"),
    (["pods", "*"], None),  # as upstream: the last resource without a subresource decides
    (["*", "pods"], 'webhooks[0].rules[0].resources: Invalid value: []string{"*", "pods"}: '
                    "if '*' is present, must not specify other resources without "
                    "subresources"),
    ([""], "webhooks[0].rules[0].resources[0]: Required value"),
])
def test_overlapping_resources_are_refused(resources: list[str], expected: str | None) -> None:
    assert problems(configuration(webhook(rules=[rule(resources)]))) == (
        [expected] if expected else [])


@pytest.mark.parametrize(("url", "expected"), [
    ("https://user:pw@hooks.example.com/", 'Invalid value: "user:pw": user information is '
                                           "not permitted in the URL"),
    ("https://hooks.example.com/x?a=b", 'Invalid value: "a=b": query parameters are not '
                                        "permitted in the URL"),
    ("https://hooks.example.com/x#top", 'Invalid value: "top": fragments are not permitted '
                                        "in the URL"),
    ("https:///x", 'Invalid value: "": host must be provided; desired format: '
                   "https://host[/path]"),
    ("https://hooks.example.com:https/", 'Required value: url must be a valid URL: parse '
                                         '"https://hooks.example.com:https/": invalid port '
                                         '":https" after host; desired format: '
                                         "https://host[/path]"),
])
def test_webhook_urls_are_https_without_user_info_query_or_fragment(url: str,
                                                                     expected: str) -> None:
    hook = webhook(clientConfig={"url": url})
    assert problems(configuration(hook)) == [f"webhooks[0].clientConfig.url: {expected}"]


def test_ipv6_url_with_a_port_is_accepted() -> None:
    assert problems(configuration(webhook(clientConfig={"url": "https://[::1]:8443/x"}))) == []


def test_mutating_webhooks_default_and_check_their_reinvocation_policy() -> None:
    s = strategy("mutatingwebhookconfigurations")
    obj = configuration(webhook(), webhook(name="again.example.com",
                                           reinvocationPolicy="Always"))
    obj["kind"] = "MutatingWebhookConfiguration"
    s.default(obj)
    assert obj["webhooks"][0]["reinvocationPolicy"] == "Never"
    assert [str(error) for error in s.validate(obj)] == [
        'webhooks[1].reinvocationPolicy: Unsupported value: "Always": supported values: '
        '"IfNeeded", "Never"']


def test_match_conditions_need_a_qualified_unique_name_and_an_expression() -> None:
    conditions = [{"name": "a", "expression": "true"}, {"name": "a", "expression": " "}]
    assert problems(configuration(webhook(matchConditions=conditions))) == [
        "webhooks[0].matchConditions[1].expression: Required value",
        'webhooks[0].matchConditions[1].name: Duplicate value: "a"']
    many = [{"name": f"c{i}", "expression": "true"} for i in range(65)]
    assert problems(configuration(webhook(matchConditions=many))) == [
        "webhooks[0].matchConditions: Too many: 65: must have at most 64 items"]


def test_an_update_may_keep_what_the_stored_configuration_already_breaks() -> None:
    """v1beta1 let side effects Some, unknown review versions and duplicate names in."""
    legacy = [webhook(sideEffects="Some", admissionReviewVersions=["v1beta2"]),
              webhook(sideEffects="Some", admissionReviewVersions=["v1beta2"])]
    old = configuration(*legacy)
    strategy().default(old)
    changed = configuration(*(dict(hook, timeoutSeconds=5) for hook in legacy))
    assert problems(changed, old) == []
    assert problems(configuration(*legacy)) == [
        'webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", '
        '"NoneOnDryRun"',
        'webhooks[0].admissionReviewVersions: Invalid value: []string{"v1beta2"}: must '
        "include at least one of v1, v1beta1",
        'webhooks[1].sideEffects: Unsupported value: "Some": supported values: "None", '
        '"NoneOnDryRun"',
        'webhooks[1].admissionReviewVersions: Invalid value: []string{"v1beta2"}: must '
        "include at least one of v1, v1beta1",
        'webhooks[1].name: Duplicate value: "check.example.com"']


def test_an_update_does_not_recheck_unchanged_match_conditions() -> None:
    stored = configuration(webhook(matchConditions=[{"name": "bad name", "expression": "x"}]))
    strategy().default(stored)
    relabelled = copy.deepcopy(stored)
    relabelled["metadata"]["labels"] = {"a": "b"}
    assert problems(relabelled, stored) == []
    changed = copy.deepcopy(stored)
    changed["webhooks"][0]["matchConditions"].append({"name": "ok", "expression": "true"})
    # Changed conditions are checked whole, the expression before the name as upstream's
    # validateMatchCondition does.
    assert problems(changed, stored) == [
        'webhooks[0].matchConditions[0].expression: Invalid value: "x": compilation failed: '
        "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n | x\n | ^",
        'webhooks[0].matchConditions[0].name: Invalid value: "bad name": name part must '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]
