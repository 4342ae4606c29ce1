"""x-kubernetes-validations (CEL rules) on custom resources: upstream's
test/e2e/apimachinery/crd_validation_rules.go, mirrored case by case with the official
`kubernetes` client."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.api_helpers import delete_definition, official_crd_clients, served, until

# On the session's API server: every definition made here has a group of its own and
# is deleted at the end.
api_client, extensions, custom = official_crd_clients()

# upstream's schemaWithValidationExpression
SCHEMA_WITH_VALIDATION_EXPRESSION = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.x + self.y > 0"},
                {"rule": "self.firstArray.isSorted() && self.secondArray.isSorted() && "
                         "((self.firstArray.sum() + self.secondArray.sum()) % 2 == 0)"},
                {"rule": "self.largeArray.all(x, self.largeArray.all(y, y == x))"},
            ],
            "properties": {
                "x": {"type": "integer"},
                "y": {"type": "integer"},
                "firstArray": {"type": "array", "maxItems": 1000,
                               "items": {"type": "integer"}},
                "secondArray": {"type": "array", "maxItems": 1000,
                                "items": {"type": "integer"}},
                "largeArray": {"type": "array", "maxItems": 725,
                               "items": {"type": "integer"}},
            },
        },
        "status": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.health == 'ok' || self.health == 'unhealthy'"}],
            "properties": {"health": {"type": "string"}},
        },
    },
}


class Noxu:
    """upstream's NewRandomNameV1CustomResourceDefinitionWithSchema, namespaced: kind
    WishIHadChosenNoxu at v1beta1 with `schema`."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.group = f"mygroup-{uuid.uuid4().hex[:6]}.example.com"
        self.version = "v1beta1"
        self.plural = f"foo{uuid.uuid4().hex[:6]}"
        self.kind = "WishIHadChosenNoxu"
        self.body = {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{self.plural}.{self.group}"},
            "spec": {"group": self.group, "scope": "Namespaced", "names": {
                "plural": self.plural, "singular": "nonenglishnoxu", "kind": self.kind,
                "listKind": "NoxuItemList"},
                "versions": [{"name": self.version, "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": schema}}]}}

    def resource(self, name: str, namespace: str, spec: dict[str, Any],
                 resource_version: str | None = None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if resource_version:
            metadata["resourceVersion"] = resource_version
        return {"apiVersion": f"{self.group}/{self.version}", "kind": self.kind,
                "metadata": metadata, "spec": spec}


@pytest.fixture
def create_crd(extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
               ) -> Iterator[Callable[[dict[str, Any]], Noxu]]:
    """upstream's CreateNewV1CustomResourceDefinitionWatchUnsafe, then served; each
    definition made is deleted at the end (DeleteV1CustomResourceDefinition)."""
    made: list[Noxu] = []

    def create(schema: dict[str, Any]) -> Noxu:
        noxu = Noxu(schema)
        extensions.create_custom_resource_definition(noxu.body)
        made.append(noxu)
        until(lambda: served(custom, noxu.group, noxu.plural, noxu.version),
              f"{noxu.plural}.{noxu.group} served")
        return noxu

    yield create
    for noxu in made:
        delete_definition(extensions, f"{noxu.plural}.{noxu.group}")


def refused_definition(extensions: client.ApiextensionsV1Api, schema: dict[str, Any]
                       ) -> str:
    """The error body of a definition's create that the server must refuse (one it
    created after all is deleted again)."""
    noxu = Noxu(schema)
    try:
        extensions.create_custom_resource_definition(noxu.body)
    except ApiException as err:
        assert err.status == 422, err.body
        return str(err.body)
    delete_definition(extensions, noxu.body["metadata"]["name"])
    pytest.fail("the definition was created")


def create_cr(custom: client.CustomObjectsApi, noxu: Noxu, namespace: str,
              spec: dict[str, Any]) -> dict[str, Any]:
    name = f"cr-1{uuid.uuid4().hex[:5]}"
    return custom.create_namespaced_custom_object(
        noxu.group, noxu.version, namespace, noxu.plural, noxu.resource(name, namespace, spec))


def test_must_not_fail_validation_for_create_of_a_custom_resource_that_satisfies_the_rules(
        create_crd: Callable[[dict[str, Any]], Noxu], custom: client.CustomObjectsApi,
        namespace: str) -> None:
    """crd_validation_rules.go: "MUST NOT fail validation for create of a custom resource
    that satisfies the x-kubernetes-validations rules"."""
    noxu = create_crd(SCHEMA_WITH_VALIDATION_EXPRESSION)
    created = create_cr(custom, noxu, namespace, {
        "x": 1, "y": 0, "firstArray": [3, 4], "secondArray": [5, 10], "largeArray": [2, 2]})
    assert created["spec"]["x"] == 1


def test_must_fail_validation_for_create_of_a_custom_resource_that_does_not_satisfy_the_rules(
        create_crd: Callable[[dict[str, Any]], Noxu], custom: client.CustomObjectsApi,
        namespace: str) -> None:
    """crd_validation_rules.go: "MUST fail validation for create of a custom resource
    that does not satisfy the x-kubernetes-validations rules"."""
    noxu = create_crd(SCHEMA_WITH_VALIDATION_EXPRESSION)
    with pytest.raises(ApiException) as refused:
        create_cr(custom, noxu, namespace, {"x": 0, "y": 0})
    assert refused.value.status == 422, refused.value.body
    assert "failed rule" in refused.value.body


def test_must_fail_create_of_a_definition_whose_rule_refers_to_a_property_that_does_not_exist(
        extensions: client.ApiextensionsV1Api) -> None:
    """crd_validation_rules.go: "MUST fail create of a custom resource definition that
    contains a x-kubernetes-validations rule that refers to a property that do not
    exist"."""
    body = refused_definition(extensions, {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": [{"rule": "self.z == 100"}],
        "properties": {"x": {"type": "integer"}}}}})
    assert "undefined field 'z'" in body


def test_must_fail_create_of_a_definition_whose_rule_contains_a_syntax_error(
        extensions: client.ApiextensionsV1Api) -> None:
    """crd_validation_rules.go: "MUST fail create of a custom resource definition that
    contains an x-kubernetes-validations rule that contains a syntax error"."""
    body = refused_definition(extensions, {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": [{"rule": "self = 42"}]}}})
    assert "Syntax error" in body


def test_must_fail_create_of_a_definition_whose_rule_exceeds_the_estimated_cost_limit(
        extensions: client.ApiextensionsV1Api) -> None:
    """crd_validation_rules.go: "MUST fail create of a custom resource definition that
    contains an x-kubernetes-validations rule that exceeds the estimated cost limit"."""
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "x": {"type": "array", "items": {
            "type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(s, s == 'string constant')"}]}}}}}}
    body = refused_definition(extensions, schema)
    assert "exceeds budget" in body


def test_must_fail_create_of_a_custom_resource_that_exceeds_the_runtime_cost_limit(
        create_crd: Callable[[dict[str, Any]], Noxu], custom: client.CustomObjectsApi,
        namespace: str) -> None:
    """crd_validation_rules.go: "MUST fail create of a custom resource that exceeds the
    runtime cost limit for x-kubernetes-validations rule execution"."""
    noxu = create_crd(SCHEMA_WITH_VALIDATION_EXPRESSION)
    with pytest.raises(ApiException) as refused:
        create_cr(custom, noxu, namespace, {"largeArray": [20] * 725})
    assert "call cost exceeds limit" in refused.value.body


def test_must_fail_update_of_a_custom_resource_that_does_not_satisfy_a_transition_rule(
        create_crd: Callable[[dict[str, Any]], Noxu], custom: client.CustomObjectsApi,
        namespace: str) -> None:
    """crd_validation_rules.go: "MUST fail update of a custom resource that does not
    satisfy a x-kubernetes-validations transition rule"."""
    noxu = create_crd({"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"num": {
            "type": "integer", "x-kubernetes-validations": [{"rule": "self > oldSelf"}]}}}}})
    created = create_cr(custom, noxu, namespace, {"num": 10})
    name = created["metadata"]["name"]
    with pytest.raises(ApiException) as refused:
        custom.replace_namespaced_custom_object(
            noxu.group, noxu.version, namespace, noxu.plural, name,
            noxu.resource(name, namespace, {"num": 9},
                          created["metadata"]["resourceVersion"]))
    assert refused.value.status == 422, refused.value.body
    assert "failed rule" in refused.value.body
