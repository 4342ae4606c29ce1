"""A definition's schema published in OpenAPI: upstream's
test/e2e/apimachinery/crd_publish_openapi.go, mirrored case by case with the real kubectl
(create, apply and explain) and the official `kubernetes` client (/openapi/v2 and the
definition's writes)."""

from __future__ import annotations

import copy
import json
import re
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.api_helpers import delete_definition, official_crd_clients, served, until

# On the session's API server: every definition made here has a group of its own and
# is deleted at the end.
api_client, extensions, custom = official_crd_clients()

Kubectl = Callable[..., Any]

SCHEMA_FOO = yaml.safe_load("""
description: Foo CRD for Testing
type: object
properties:
  spec:
    type: object
    description: Specification of Foo
    properties:
      bars:
        description: List of Bars and their specs.
        type: array
        items:
          type: object
          required:
          - name
          properties:
            name:
              description: Name of Bar.
              type: string
            age:
              description: Age of Bar.
              type: string
            feeling:
              description: Whether Bar is feeling great.
              type: string
              enum:
              - Great
              - Down
            bazs:
              description: List of Bazs.
              items:
                type: string
              type: array
  status:
    description: Status of Foo
    type: object
    properties:
      bars:
        description: List of Bars and their statuses.
        type: array
        items:
          type: object
          properties:
            name:
              description: Name of Bar.
              type: string
            available:
              description: Whether the Bar is installed.
              type: boolean
            quxType:
              description: Indicates to external qux type.
              pattern: in-tree|out-of-tree
              type: string
""")

SCHEMA_WALDO = yaml.safe_load("""
description: Waldo CRD for Testing
type: object
properties:
  spec:
    description: Specification of Waldo
    type: object
    properties:
      dummy:
        description: Dummy property.
        type: object
  status:
    description: Status of Waldo
    type: object
    properties:
      bars:
        description: List of Bars and their statuses.
        type: array
        items:
          type: object
""")

SCHEMA_CUSTOM_SERVICE = yaml.safe_load("""
description: CustomService CRD for Testing
type: object
properties:
  spec:
    description: Specification of CustomService
    type: object
    properties:
      dummy:
        description: Dummy property.
        type: string
""")


def preserving(description: str, at_root: bool) -> dict[str, Any]:
    """upstream's schemaPreserveRoot and schemaPreserveNested: Waldo's schema with
    x-kubernetes-preserve-unknown-fields at the root or on spec."""
    schema = copy.deepcopy(SCHEMA_WALDO)
    schema["description"] = description
    target = schema if at_root else schema["properties"]["spec"]
    target["x-kubernetes-preserve-unknown-fields"] = True
    return schema


SCHEMA_PRESERVE_ROOT = preserving("preserve-unknown-properties at root for Testing", True)
SCHEMA_PRESERVE_NESTED = preserving(
    "preserve-unknown-properties in nested field for Testing", False)

# upstream's random custom resource: fields no schema names
RANDOM_FIELDS = '"a":{"b":[{"c":"d"}]}'

# the module's groups: unique, so that a rerun against a kept server starts clean
RUN = uuid.uuid4().hex[:5]


class TestCrd:
    """A definition the test made (upstream's crd.TestCrd): its name, group, kind and
    plural, and the versions it serves."""

    __test__ = False

    def __init__(self, crd: client.V1CustomResourceDefinition) -> None:
        self.crd = crd
        self.name: str = crd.metadata.name
        self.group: str = crd.spec.group
        self.kind: str = crd.spec.names.kind
        self.plural: str = crd.spec.names.plural


def definition_name(crd: TestCrd, version: str) -> str:
    """upstream's definitionName: ToRESTFriendlyName of group/version/kind."""
    return ".".join([*reversed(crd.group.split(".")), version, crd.kind])


def openapi_v2(api_client: client.ApiClient) -> dict[str, Any]:
    """GET /openapi/v2 on the client's server."""
    with urllib.request.urlopen(f"{api_client.configuration.host}/openapi/v2",
                                timeout=30) as answer:
        return json.loads(answer.read())


def without_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """upstream's dropDefaults: the properties and extension the server adds."""
    schema = copy.deepcopy(schema)
    for name in ("metadata", "apiVersion", "kind"):
        (schema.get("properties") or {}).pop(name, None)
    if schema.get("properties") == {}:
        del schema["properties"]
    schema.pop("x-kubernetes-group-version-kind", None)
    return schema


def wait_for_definition(api_client: client.ApiClient, name: str,
                        schema: dict[str, Any] | None) -> None:
    """upstream's waitForDefinition: `name` in /openapi/v2, equal to `schema` once the
    server's own additions are dropped (only its presence when `schema` is None)."""
    last: list[Any] = []

    def matches() -> bool:
        found = openapi_v2(api_client)["definitions"].get(name)
        last[:] = [found]
        return found is not None and (schema is None or without_defaults(found) == schema)

    try:
        until(matches, f"definition {name}", timeout=60)
    except AssertionError as err:
        raise AssertionError(f"{err}: expected {schema}, last published {last}") from None


def wait_for_definitions(api_client: client.ApiClient, crd: TestCrd,
                         schema: dict[str, Any], *versions: str) -> None:
    """waitForDefinition of the definition's `versions`, in turn, each with `schema`."""
    for version in versions:
        wait_for_definition(api_client, definition_name(crd, version), schema)


def wait_for_definition_cleanup(api_client: client.ApiClient, name: str) -> None:
    """upstream's waitForDefinitionCleanup: `name` gone from /openapi/v2."""
    until(lambda: name not in openapi_v2(api_client)["definitions"],
          f"definition {name} removed", timeout=60)


@pytest.fixture
def setup_crd(api_client: client.ApiClient, extensions: client.ApiextensionsV1Api,
              custom: client.CustomObjectsApi) -> Iterator[Callable[..., TestCrd]]:
    """upstream's setupCRDAndVerifySchemaWithOptions: a definition serving `versions`
    (the first stored) with `schema`, each version published before it returns; every
    definition made is deleted at the end and its definitions are gone from /openapi/v2."""
    made: list[str] = []

    def setup(schema: dict[str, Any] | None, group_suffix: str, *versions: str,
              expect: dict[str, Any] | None | str = "schema",
              names: dict[str, Any] | None = None) -> TestCrd:
        group = f"crd-publish-openapi-{RUN}-test-{group_suffix}.example.com"
        random = uuid.uuid4().hex[:4]
        names = names or {
            "plural": f"e2e-test-crd-publish-openapi-{random}-crds",
            "singular": f"e2e-test-crd-publish-openapi-{random}-crd",
            "kind": f"E2e-test-crd-publish-openapi-{random}-crd",
            "listKind": f"E2e-test-crd-publish-openapi-{random}-crdList"}
        body = {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{names['plural']}.{group}"},
            "spec": {"group": group, "scope": "Namespaced", "names": names, "versions": [
                {"name": version, "served": True, "storage": index == 0, "schema": {
                    "openAPIV3Schema": schema if schema is not None else {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
                for index, version in enumerate(versions)]}}
        created = TestCrd(extensions.create_custom_resource_definition(body))
        made.append(created.name)
        until(lambda: served(custom, group, created.plural, *versions),
              f"{created.name} served")
        expected = (schema if schema is not None else {"type": "object"}) if (
            expect == "schema") else expect
        for version in versions:
            wait_for_definition(api_client, definition_name(created, version),
                                expected if not isinstance(expected, str) else None)
        return created

    yield setup
    for name in made:
        try:
            crd = extensions.read_custom_resource_definition(name)
            delete_definition(extensions, name)
        except client.ApiException as err:
            if err.status != 404:
                raise
            continue
        for version in crd.spec.versions:
            wait_for_definition_cleanup(api_client, definition_name(TestCrd(crd), version.name))


def cleanup_crd(api_client: client.ApiClient, extensions: client.ApiextensionsV1Api,
                *crds: TestCrd) -> None:
    """upstream's cleanupCRD, of each: delete it and wait for each version's definition to
    go."""
    for crd in crds:
        delete_definition(extensions, crd.name)
        for version in crd.crd.spec.versions:
            wait_for_definition_cleanup(api_client, definition_name(crd, version.name))


def meta(crd: TestCrd, name: str) -> str:
    """upstream's metaPattern."""
    return (f'"kind":"{crd.kind}","apiVersion":"{crd.group}/'
            f'{crd.crd.spec.versions[0].name}","metadata":{{"name":"{name}"}}')


def verify_kubectl_explain(kubectl: Kubectl, name: str, pattern: str,
                           *options: str) -> None:
    """upstream's verifyKubectlExplain: `kubectl explain name` matches `pattern`."""
    output = kubectl(*options, "explain", name).stdout
    assert re.search(pattern, output), f"kubectl explain {name}:\n{output}\n!~ {pattern}"


def create_apply_and_delete(kubectl: Kubectl, namespace: str, crd: TestCrd, name: str,
                            fields: str) -> None:
    """kubectl create, then apply, of one custom resource (`name`, with the JSON members
    `fields`), each accepted by kubectl's validation and the server, and deleted after."""
    body = f"{{{meta(crd, name)},{fields}}}"
    for verb in ("create", "apply"):
        kubectl(f"--namespace={namespace}", verb, "-f", "-", input=body)
        kubectl(f"--namespace={namespace}", "delete", crd.plural, name)


def test_works_for_crd_with_validation_schema(kubectl: Kubectl, namespace: str,
                                              setup_crd: Callable[..., TestCrd],
                                              api_client: client.ApiClient,
                                              extensions: client.ApiextensionsV1Api) -> None:
    """crd_publish_openapi.go: "works for CRD with validation schema"."""
    crd = setup_crd(SCHEMA_FOO, "foo", "v1")
    create_apply_and_delete(kubectl, namespace, crd, "test-foo",
                            '"spec":{"bars":[{"name":"test-bar"}]}')

    verify_kubectl_explain(kubectl, crd.plural, r"(?s)DESCRIPTION:.*Foo CRD for Testing.*"
                           r"FIELDS:.*apiVersion.*<string>.*APIVersion defines.*spec.*"
                           r"<Object>.*Specification of Foo")
    verify_kubectl_explain(kubectl, crd.plural + ".metadata",
                           r"(?s)DESCRIPTION:.*Standard object's metadata.*FIELDS:.*"
                           r"creationTimestamp.*<string>.*CreationTimestamp is a timestamp")
    verify_kubectl_explain(kubectl, crd.plural + ".spec",
                           r"(?s)DESCRIPTION:.*Specification of Foo.*FIELDS:.*bars.*"
                           r"<\[\]Object>.*List of Bars and their specs")
    # upstream's pattern begins `RESOURCE:`, kubectl's header before its OpenAPI v3
    # explain; this kubectl heads a field's explanation `FIELD:`
    verify_kubectl_explain(kubectl, crd.plural + ".spec.bars",
                           r"(?s)FIELD:.*bars.*<\[\]Object>.*DESCRIPTION:.*List of Bars and "
                           r"their specs.*FIELDS:.*bazs.*<\[\]string>.*List of Bazs.*name.*"
                           r"<string>.*Name of Bar")

    missing = kubectl("explain", crd.plural + ".spec.bars2", check=False)
    assert missing.returncode != 0
    assert 'field "bars2" does not exist' in missing.stderr
    cleanup_crd(api_client, extensions, crd)


def test_works_for_crd_without_validation_schema(kubectl: Kubectl, namespace: str,
                                                 setup_crd: Callable[..., TestCrd],
                                                 api_client: client.ApiClient,
                                                 extensions: client.ApiextensionsV1Api
                                                 ) -> None:
    """crd_publish_openapi.go: "works for CRD without validation schema" (the whole
    object x-kubernetes-preserve-unknown-fields, published in v2 as `type: object`)."""
    crd = setup_crd(None, "empty", "v1")
    create_apply_and_delete(kubectl, namespace, crd, "test-cr", RANDOM_FIELDS)
    verify_kubectl_explain(kubectl, crd.plural, r"(?s)DESCRIPTION:.*<empty>")
    cleanup_crd(api_client, extensions, crd)


def test_works_for_crd_preserving_unknown_fields_at_the_schema_root(
        kubectl: Kubectl, namespace: str, setup_crd: Callable[..., TestCrd],
        api_client: client.ApiClient, extensions: client.ApiextensionsV1Api) -> None:
    """crd_publish_openapi.go: "works for CRD preserving unknown fields at the schema
    root"."""
    crd = setup_crd(SCHEMA_PRESERVE_ROOT, "unknown-at-root", "v1", expect=None)
    create_apply_and_delete(kubectl, namespace, crd, "test-cr", RANDOM_FIELDS)
    verify_kubectl_explain(kubectl, crd.plural, rf"(?s)KIND:.*{re.escape(crd.kind)}")
    cleanup_crd(api_client, extensions, crd)


def test_works_for_crd_preserving_unknown_fields_in_an_embedded_object(
        kubectl: Kubectl, namespace: str, setup_crd: Callable[..., TestCrd],
        api_client: client.ApiClient, extensions: client.ApiextensionsV1Api) -> None:
    """crd_publish_openapi.go: "works for CRD preserving unknown fields in an embedded
    object"."""
    crd = setup_crd(SCHEMA_PRESERVE_NESTED, "unknown-in-nested", "v1", expect=None)
    create_apply_and_delete(kubectl, namespace, crd, "test-cr",
                            '"spec":{"a":null,"b":[{"c":"d"}]}')
    verify_kubectl_explain(kubectl, crd.plural,
                           r"(?s)DESCRIPTION:.*preserve-unknown-properties in nested field "
                           r"for Testing")
    cleanup_crd(api_client, extensions, crd)


def foo_and_waldo_published(setup_crd: Callable[..., TestCrd], api_client: client.ApiClient,
                            extensions: client.ApiextensionsV1Api, foo_at: tuple[str, str],
                            waldo_at: tuple[str, str]) -> tuple[TestCrd, TestCrd]:
    """The "multiple CRDs" cases: Foo and Waldo made, each at its (group suffix, version),
    both published with their own schemas, then cleaned up; the two definitions made."""
    foo = setup_crd(SCHEMA_FOO, *foo_at)
    waldo = setup_crd(SCHEMA_WALDO, *waldo_at)
    wait_for_definition(api_client, definition_name(waldo, waldo_at[1]), SCHEMA_WALDO)
    wait_for_definition(api_client, definition_name(foo, foo_at[1]), SCHEMA_FOO)
    cleanup_crd(api_client, extensions, foo, waldo)
    return foo, waldo


def test_works_for_multiple_crds_of_different_groups(
        setup_crd: Callable[..., TestCrd], api_client: client.ApiClient,
        extensions: client.ApiextensionsV1Api) -> None:
    """crd_publish_openapi.go: "works for multiple CRDs of different groups"."""
    foo, waldo = foo_and_waldo_published(setup_crd, api_client, extensions, ("foo", "v1"),
                                         ("waldo", "v1beta1"))
    assert foo.group != waldo.group


def test_works_for_multiple_crds_of_same_group_but_different_versions(
        setup_crd: Callable[..., TestCrd], api_client: client.ApiClient,
        extensions: client.ApiextensionsV1Api) -> None:
    """crd_publish_openapi.go: "works for multiple CRDs of same group but different
    versions"."""
    multi = setup_crd(SCHEMA_FOO, "multi-ver", "v2", "v3")
    wait_for_definitions(api_client, multi, SCHEMA_FOO, "v3", "v2")
    cleanup_crd(api_client, extensions, multi)

    foo, waldo = foo_and_waldo_published(setup_crd, api_client, extensions,
                                         ("common-group", "v4"), ("common-group", "v5"))
    assert foo.group == waldo.group


def test_works_for_multiple_crds_of_same_group_and_version_but_different_kinds(
        setup_crd: Callable[..., TestCrd], api_client: client.ApiClient,
        extensions: client.ApiextensionsV1Api) -> None:
    """crd_publish_openapi.go: "works for multiple CRDs of same group and version but
    different kinds"."""
    foo, waldo = foo_and_waldo_published(setup_crd, api_client, extensions,
                                         ("common-group", "v6"), ("common-group", "v6"))
    assert foo.group == waldo.group


def test_updates_the_published_spec_when_one_version_gets_renamed(
        setup_crd: Callable[..., TestCrd], api_client: client.ApiClient,
        extensions: client.ApiextensionsV1Api) -> None:
    """crd_publish_openapi.go: "updates the published spec when one version gets
    renamed"."""
    multi = setup_crd(SCHEMA_FOO, "multi-ver", "v2", "v3")
    wait_for_definitions(api_client, multi, SCHEMA_FOO, "v3", "v2")

    multi.crd = extensions.patch_custom_resource_definition(multi.name, [
        {"op": "test", "path": "/spec/versions/1/name", "value": "v3"},
        {"op": "replace", "path": "/spec/versions/1/name", "value": "v4"}])
    assert [v.name for v in multi.crd.spec.versions] == ["v2", "v4"]

    wait_for_definition(api_client, definition_name(multi, "v4"), SCHEMA_FOO)
    wait_for_definition_cleanup(api_client, definition_name(multi, "v3"))
    wait_for_definition(api_client, definition_name(multi, "v2"), SCHEMA_FOO)
    cleanup_crd(api_client, extensions, multi)


def test_removes_definition_from_spec_when_one_version_gets_changed_to_not_be_served(
        setup_crd: Callable[..., TestCrd], api_client: client.ApiClient,
        extensions: client.ApiextensionsV1Api) -> None:
    """crd_publish_openapi.go: "removes definition from spec when one version gets
    changed to not be served"."""
    crd = setup_crd(SCHEMA_FOO, "multi-to-single-ver", "v5", "v6alpha1")
    wait_for_definitions(api_client, crd, SCHEMA_FOO, "v6alpha1", "v5")

    current = extensions.read_custom_resource_definition(crd.name)
    current.spec.versions[1].served = False
    crd.crd = extensions.replace_custom_resource_definition(crd.name, current)

    wait_for_definition_cleanup(api_client, definition_name(crd, "v6alpha1"))
    wait_for_definition(api_client, definition_name(crd, "v5"), SCHEMA_FOO)
    cleanup_crd(api_client, extensions, crd)


def test_kubectl_explain_works_for_cr_with_the_same_resource_name_as_built_in_object(
        kubectl: Kubectl, setup_crd: Callable[..., TestCrd], api_client: client.ApiClient,
        extensions: client.ApiextensionsV1Api, tmp_path: Path) -> None:
    """crd_publish_openapi.go: "[Flaky] kubectl explain works for CR with the same
    resource name as built-in object." (found by its short name). kubectl expands a short
    name from its discovery cache before it refreshes that cache, so this kubectl starts
    from an empty one: the earlier tests' cache predates the definition."""
    short_name = f"ksvc-{uuid.uuid4().hex[:8]}"
    service = setup_crd(SCHEMA_CUSTOM_SERVICE, "service", "v1", names={
        "plural": "services", "singular": "service", "listKind": "ServiceList",
        "kind": "Service", "shortNames": [short_name]})
    verify_kubectl_explain(kubectl, short_name + ".spec",
                           r"(?s)DESCRIPTION:.*Specification of CustomService.*FIELDS:.*"
                           r"dummy.*<string>.*Dummy property",
                           f"--cache-dir={tmp_path / 'kube-cache'}")
    cleanup_crd(api_client, extensions, service)
