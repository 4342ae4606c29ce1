"""Server-side field validation of custom resources: the CustomResourceDefinition cases
of upstream's test/e2e/apimachinery/field_validation.go, mirrored with the official
`kubernetes` client (the definitions) and server-side apply of YAML with
fieldValidation=Strict (the custom resources)."""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
import uuid
from typing import Any

import pytest
from kubernetes import client

from tests.api_helpers import delete_definition, official_crd_clients, served, until

# On the session's API server: every definition made here has a group of its own and
# is deleted at the end.
api_client, extensions, custom = official_crd_clients()

PORTS = {
    "type": "array",
    "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
    "x-kubernetes-list-type": "map",
    "items": {
        "properties": {
            "containerPort": {"format": "int32", "type": "integer"},
            "hostIP": {"type": "string"},
            "hostPort": {"format": "int32", "type": "integer"},
            "name": {"type": "string"},
            "protocol": {"type": "string"},
        },
        "required": ["containerPort", "protocol"],
        "type": "object",
    },
}
CRON_SPEC = {"type": "string", "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"}

# upstream's schemas: a closed spec, and a spec preserving unknown fields (with and
# without an embedded resource under it)
SCHEMA = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "foo": {"type": "string"}, "cronSpec": CRON_SPEC, "ports": PORTS}}}}
SCHEMA_PRESERVING = copy.deepcopy(SCHEMA)
SCHEMA_PRESERVING["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] = True
SCHEMA_EMBEDDED = copy.deepcopy(SCHEMA_PRESERVING)
SCHEMA_EMBEDDED["properties"]["spec"]["properties"]["template"] = {
    "type": "object", "x-kubernetes-embedded-resource": True, "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
        "spec": {"type": "object"}}}


class Noxu:
    """upstream's NewRandomNameMultipleVersionCustomResourceDefinition, cluster-scoped:
    kind WishIHadChosenNoxu, v1beta1 stored and v1 served, each with `schema` (the
    fixtures' open schema when None)."""

    def __init__(self, schema: dict[str, Any] | None) -> None:
        self.group = f"mygroup-{uuid.uuid4().hex[:6]}.example.com"
        self.plural = f"foo{uuid.uuid4().hex[:6]}"
        self.kind = "WishIHadChosenNoxu"
        schema = schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        self.body = {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{self.plural}.{self.group}"},
            "spec": {"group": self.group, "scope": "Cluster", "names": {
                "plural": self.plural, "singular": "nonenglishnoxu", "kind": self.kind,
                "shortNames": ["foo", "bar", "abc", "def"], "listKind": "NoxuItemList",
                "categories": ["all"]},
                "versions": [
                    {"name": "v1beta1", "served": True, "storage": True,
                     "schema": {"openAPIV3Schema": schema}},
                    {"name": "v1", "served": True, "storage": False,
                     "schema": {"openAPIV3Schema": schema}}]}}


@pytest.fixture
def noxu(extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
         ) -> Any:
    """upstream's CreateNewV1CustomResourceDefinition: a Noxu definition created and
    served; each is deleted (with its objects) at the end."""
    made: list[Noxu] = []

    def create(schema: dict[str, Any] | None) -> Noxu:
        definition = Noxu(schema)
        extensions.create_custom_resource_definition(definition.body)
        made.append(definition)
        until(lambda: served(custom, definition.group, definition.plural, "v1beta1", "v1"),
              f"{definition.plural}.{definition.group} served")
        return definition

    yield create
    for definition in made:
        for item in custom.list_cluster_custom_object(
                definition.group, "v1beta1", definition.plural)["items"]:
            # the objects carry upstream's test-finalizer: drop it so that they go
            custom.patch_cluster_custom_object(
                definition.group, "v1beta1", definition.plural, item["metadata"]["name"],
                {"metadata": {"finalizers": None}})
        delete_definition(extensions, f"{definition.plural}.{definition.group}")


def apply_yaml(base: str, definition: Noxu, name: str, body: str, mode: str
               ) -> tuple[int, str, list[str]]:
    """Server-side apply of a YAML body with fieldValidation=`mode`: status, body and
    Warning headers."""
    url = (f"{base}/apis/{definition.group}/v1beta1/{definition.plural}/{name}"
           f"?fieldManager=field_validation_mgr&fieldValidation={mode}")
    request = urllib.request.Request(url, data=body.encode(), method="PATCH", headers={
        "Content-Type": "application/apply-patch+yaml", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return (answer.status, answer.read().decode(),
                    answer.headers.get_all("Warning") or [])
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(), err.headers.get_all("Warning") or []


def apply_strict(base: str, definition: Noxu, name: str, body: str) -> tuple[int, str]:
    """Server-side apply of a YAML body with fieldValidation=Strict: status and body."""
    return apply_yaml(base, definition, name, body, "Strict")[:2]


def header(definition: Noxu, name: str) -> str:
    return f"""
apiVersion: {definition.group}/v1beta1
kind: {definition.kind}
metadata:
  name: {name}
  finalizers:
  - test-finalizer
"""


PORTS_YAML = """  cronSpec: "* * * * */5"
  ports:
  - name: x
    containerPort: 80
    protocol: TCP"""


def test_should_create_apply_a_valid_cr_for_crd_with_validation_schema(
        noxu: Any, apiserver: Any) -> None:
    """field_validation.go: "should create/apply a valid CR for CRD with validation
    schema"."""
    definition = noxu(SCHEMA)
    status, body = apply_strict(apiserver.url, definition, "mytest", header(
        definition, "mytest") + "spec:\n  foo: foo1\n" + PORTS_YAML)
    assert status == 201, body
    assert json.loads(body)["spec"]["foo"] == "foo1"


def test_should_create_apply_a_cr_with_unknown_fields_for_crd_with_no_validation_schema(
        noxu: Any, apiserver: Any) -> None:
    """field_validation.go: "should create/apply a CR with unknown fields for CRD with no
    validation schema"."""
    definition = noxu(None)
    status, body = apply_strict(apiserver.url, definition, "mytest", header(
        definition, "mytest") + "spec:\n  unknown: uk1\n" + PORTS_YAML)
    assert status == 201, body
    assert json.loads(body)["spec"]["unknown"] == "uk1"


def test_should_create_apply_an_invalid_cr_with_extra_properties_for_crd_with_validation_schema(
        noxu: Any, apiserver: Any) -> None:
    """field_validation.go: "should create/apply an invalid CR with extra properties for
    CRD with validation schema"."""
    definition = noxu(SCHEMA)
    status, body = apply_strict(apiserver.url, definition, "mytest", header(
        definition, "mytest") + "unknownField: unknown\nspec:\n  foo: foo1\n" + PORTS_YAML)
    assert 400 <= status < 500, body
    assert ".unknownField: field not declared in schema" in body


def test_should_detect_unknown_metadata_fields_in_both_the_root_and_embedded_object_of_a_cr(
        noxu: Any, apiserver: Any, namespace: str) -> None:
    """field_validation.go: "should detect unknown metadata fields in both the root and
    embedded object of a CR"."""
    definition = noxu(SCHEMA_EMBEDDED)
    body_yaml = f"""
apiVersion: {definition.group}/v1beta1
kind: {definition.kind}
metadata:
  name: mytest
  unknownMeta: unknown
  finalizers:
  - test-finalizer
spec:
  template:
    apiversion: foo/v1
    kind: Sub
    metadata:
        unknownSubMeta: unknown
        name: subobject
        namespace: {namespace}
  foo: foo1
""" + PORTS_YAML
    status, body = apply_strict(apiserver.url, definition, "mytest", body_yaml)
    assert 400 <= status < 500, body
    assert (".spec.template.metadata.unknownSubMeta: field not declared in schema" in body
            or ".metadata.unknownMeta: field not declared in schema" in body)


def test_should_detect_duplicates_in_a_cr_when_preserving_unknown_fields(
        noxu: Any, apiserver: Any) -> None:
    """field_validation.go: "should detect duplicates in a CR when preserving unknown
    fields"."""
    definition = noxu(SCHEMA_PRESERVING)
    status, body = apply_strict(apiserver.url, definition, "mytest", header(
        definition, "mytest") + "spec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n"
        + PORTS_YAML)
    assert 400 <= status < 500, body
    assert 'line 11: key \\"foo\\" already set in map' in body


def test_duplicates_in_a_cr_are_a_warning_or_ignored_as_field_validation_asks(
        noxu: Any, apiserver: Any) -> None:
    """The same duplicate as "should detect duplicates in a CR when preserving unknown
    fields", with fieldValidation Warn (applied, the strict error as a warning) and
    Ignore (applied, silently, the last value winning)."""
    definition = noxu(SCHEMA_PRESERVING)
    body_yaml = (header(definition, "{name}") + "spec:\n  unknown: uk1\n  foo: foo1\n"
                 "  foo: foo2\n" + PORTS_YAML)
    status, body, warnings = apply_yaml(apiserver.url, definition, "warned",
                                        body_yaml.replace("{name}", "warned"), "Warn")
    assert status == 201, body
    assert json.loads(body)["spec"]["foo"] == "foo2"
    assert any('line 11: key \\"foo\\" already set in map' in w for w in warnings), warnings
    status, body, warnings = apply_yaml(apiserver.url, definition, "ignored",
                                        body_yaml.replace("{name}", "ignored"), "Ignore")
    assert status == 201, body
    assert json.loads(body)["spec"]["foo"] == "foo2"
    assert warnings == []
