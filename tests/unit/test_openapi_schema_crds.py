"""The real-world CRDs in the shared data (../shared/data/crds, see its README): every
version's schema is structural, and gateway-api's examples validate against their CRD's
schema with nothing pruned, their CEL rules (x-kubernetes-validations) included."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

from minikube_py.api.openapi_schema.compiled import Node, compile_schema
from minikube_py.api.openapi_schema.defaulting import apply_defaults
from minikube_py.api.openapi_schema.pruning import prune
from minikube_py.api.openapi_schema.structural import schema_errors
from minikube_py.api.openapi_schema.validation import validate

# ../shared/data/crds from the checkout: /work/main's parent, or a worktree's ancestor
CRDS = next((parent / "shared/data/crds" for parent in Path(__file__).resolve().parents
             if (parent / "shared/data/crds").is_dir()), None)
pytestmark = pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds")


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML 1.1 without the `=` value tag: prometheus-operator's enums list "=" as a string."""


_Loader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:value"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.load_all(path.read_text(), _Loader) if doc]


@functools.cache
def _crds() -> list[tuple[str, dict[str, Any]]]:
    assert CRDS is not None
    return [(f"{path.parent.name}/{path.name}", doc)
            for path in sorted(CRDS.glob("*/*.yaml")) for doc in _documents(path)
            if doc.get("kind") == "CustomResourceDefinition"]


def test_the_data_holds_the_crds_the_readme_lists() -> None:
    projects = {name.split("/")[0] for name, _ in _crds()}
    assert projects == {"cert-manager", "gateway-api", "prometheus-operator"}
    assert len(_crds()) >= 25


def test_every_crd_schema_is_structural() -> None:
    problems = []
    for name, crd in _crds():
        for index, version in enumerate(crd["spec"]["versions"]):
            path = f"spec.versions[{index}].schema.openAPIV3Schema"
            problems += [f"{name}: {e}"
                         for e in schema_errors(version["schema"]["openAPIV3Schema"], path)]
    assert problems == []



def test_every_crd_schema_compiles() -> None:
    """Patterns are Go (RE2) syntax: prometheus-operator's `^((?i)sun|mon|...)day` puts a
    flag group where Python's re refuses one."""
    nodes = [compile_schema(v["schema"]["openAPIV3Schema"])
             for _, crd in _crds() for v in crd["spec"]["versions"]]
    assert len(nodes) >= 25
    node = compile_schema({"type": "string", "pattern": "^((?i)sun|mon)day$"})
    assert validate(node, "MONday") == []
    assert [str(e) for e in validate(node, "tueday")] == [
        "Invalid value: \"tueday\": . in body should match '^((?i)sun|mon)day$'"]

@functools.cache
def _gateway_schemas() -> dict[tuple[str, str], Node]:
    schemas = {}
    for name, crd in _crds():
        if name.startswith("gateway-api/"):
            spec = crd["spec"]
            for version in spec["versions"]:
                schemas[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = \
                    compile_schema(version["schema"]["openAPIV3Schema"])
    return schemas


def test_gateway_api_examples_validate_against_their_schemas() -> None:
    assert CRDS is not None
    schemas = _gateway_schemas()
    checked, problems = 0, []
    for path in sorted((CRDS / "gateway-api/examples").glob("*.yaml")):
        for doc in _documents(path):
            node = schemas.get((doc.get("apiVersion", ""), doc.get("kind", "")))
            if node is None:
                continue
            obj = copy.deepcopy(doc)
            pruned = prune(obj, node)
            apply_defaults(node, obj)
            problems += [f"{path.name}: unknown field {p!r}" for p in pruned]
            problems += [f"{path.name}: {e}" for e in validate(node, obj)]
            checked += 1
    assert problems == []
    assert checked >= 60


def test_a_broken_gateway_api_example_is_reported() -> None:
    node = _gateway_schemas()[("gateway.networking.k8s.io/v1", "HTTPRoute")]
    route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
             "metadata": {"name": "r"},
             "spec": {"parentRefs": [{"name": "gw", "port": 70000}],
                      "rules": [{"matches": [{"path": {"type": "Glob", "value": "/"}}]}]}}
    assert [str(e) for e in validate(node, route)] == [
        "spec.parentRefs[0].port: Invalid value: 70000: spec.parentRefs[0].port in body "
        "should be less than or equal to 65535",
        'spec.rules[0].matches[0].path.type: Unsupported value: "Glob": supported values: '
        '"Exact", "PathPrefix", "RegularExpression"',
        # an enum error keeps the CEL rules from running, as upstream's hasBlockingErr
        "<nil>: Invalid value: null: some validation rules were not checked because the "
        "object was invalid; correct the existing errors to complete validation"]


def test_a_50_field_object_passes_through_prune_default_and_validate_unchanged() -> None:
    """The 50-field shape benchmarks/crd.py will time (speed is measured there, not
    asserted here): a valid object loses nothing, gains nothing and raises nothing."""
    fields = {f"f{i}": ({"type": "integer", "minimum": 0} if i % 3 == 0 else
                        {"type": "string", "maxLength": 64} if i % 3 == 1 else
                        {"type": "array", "items": {"type": "string"}})
              for i in range(50)}
    node = compile_schema({"type": "object", "properties": {
        "spec": {"type": "object", "properties": fields}}})
    obj = {"spec": {name: (i if i % 3 == 0 else f"v{i}" if i % 3 == 1 else ["a", "b"])
                    for i, name in enumerate(fields)}}
    copy_ = {"spec": dict(obj["spec"])}
    assert prune(copy_, node) == []
    apply_defaults(node, copy_)
    assert validate(node, copy_) == []
    assert copy_ == obj


def test_every_gateway_api_rule_compiles() -> None:
    rules = []
    for node in _gateway_schemas().values():
        stack = [node]
        while stack:
            current = stack.pop()
            rules += current.cel_rules()
            stack += [*current.properties.values(), *current.all_of,
                      *(n for n in (current.items, current.additional) if n is not None)]
    assert [(r.rule, r.error) for r in rules if r.error or r.program is None] == []
    assert len(rules) >= 295


def _gateway(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind,
            "metadata": {"name": "x"}, "spec": spec}


def _gateway_errors(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    node = _gateway_schemas()[(obj["apiVersion"], obj["kind"])]
    obj = copy.deepcopy(obj)
    apply_defaults(node, obj)
    if old is not None:
        old = copy.deepcopy(old)
        apply_defaults(node, old)
    return [str(e) for e in validate(node, obj, old=old)]


_ROUTE_RULE = {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
               "backendRefs": [{"name": "svc", "port": 80}]}
INVALID_GATEWAY_OBJECTS = [
    ("redirect with backendRefs", _gateway("HTTPRoute", {"parentRefs": [{"name": "gw"}], "rules": [
        {**_ROUTE_RULE, "filters": [{"type": "RequestRedirect",
                                     "requestRedirect": {"scheme": "https"}}]}]}),
     ['spec.rules[0]: Invalid value: "object": RequestRedirect filter must not be used '
      "together with backendRefs"]),
    ("path characters", _gateway("HTTPRoute", {"parentRefs": [{"name": "gw"}], "rules": [
        {**_ROUTE_RULE, "matches": [{"path": {"type": "Exact", "value": "/a b"}}]}]}),
     ['spec.rules[0].matches[0].path: Invalid value: "object": must only contain valid '
      "characters (matching ^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$) for "
      "types ['Exact', 'PathPrefix']"]),
    ("timeouts", _gateway("HTTPRoute", {"parentRefs": [{"name": "gw"}], "rules": [
        {**_ROUTE_RULE, "timeouts": {"request": "1s", "backendRequest": "2s"}}]}),
     ['spec.rules[0].timeouts: Invalid value: "object": backendRequest timeout cannot be '
      "longer than request timeout"]),
    ("hostname is an IP", _gateway("TLSRoute", {
        "parentRefs": [{"name": "gw"}], "hostnames": ["10.0.0.1"],
        "rules": [{"backendRefs": [{"name": "s", "port": 443}]}]}),
     ['spec.hostnames: Invalid value: "array": Hostnames cannot contain an IP']),
    ("duplicate listener names", _gateway("Gateway", {
        "gatewayClassName": "c", "listeners": [{"name": "a", "port": 80, "protocol": "HTTP"},
                                               {"name": "a", "port": 81, "protocol": "HTTP"}]}),
     ['spec.listeners[1]: Duplicate value: {"name":"a"}',
      'spec.listeners: Invalid value: "array": Listener name must be unique within the '
      "Gateway"]),
    ("annotation key", _gateway("Gateway", {
        "gatewayClassName": "c", "listeners": [{"name": "a", "port": 80, "protocol": "HTTP"}],
        "infrastructure": {"annotations": {"-bad": "x"}}}),
     ['spec.infrastructure.annotations: Invalid value: "object": Annotation keys must be in '
      "the form of an optional DNS subdomain prefix followed by a required name segment of "
      "up to 63 characters."]),
    ("parentRefs to one parent without sectionName", _gateway("HTTPRoute", {
        "parentRefs": [{"name": "gw"}, {"name": "gw"}], "rules": [_ROUTE_RULE]}),
     ['spec.parentRefs: Invalid value: "array": sectionName must be unique when '
      "parentRefs includes 2 or more references to the same parent"]),
]


@pytest.mark.parametrize(("obj", "expected"), [c[1:] for c in INVALID_GATEWAY_OBJECTS],
                         ids=[c[0] for c in INVALID_GATEWAY_OBJECTS])
def test_invalid_gateway_api_objects_fail_with_their_rules_message(
        obj: dict[str, Any], expected: list[str]) -> None:
    assert _gateway_errors(obj) == expected


def test_gateway_class_controller_name_is_immutable() -> None:
    old = _gateway("GatewayClass", {"controllerName": "example.com/a"})
    new = _gateway("GatewayClass", {"controllerName": "example.com/b"})
    assert _gateway_errors(new) == []
    assert _gateway_errors(old, old=old) == []
    assert _gateway_errors(new, old=old) == [
        'spec.controllerName: Invalid value: "string": Value is immutable']


def test_rules_see_escaped_property_names() -> None:
    """The parentRefs rules read `namespace` as `__namespace__` (cel.Escape): two refs to
    same-named Gateways in different namespaces are different parents."""
    route = _gateway("HTTPRoute", {"parentRefs": [{"name": "gw", "namespace": "a"},
                                                  {"name": "gw", "namespace": "b"}],
                                   "rules": [_ROUTE_RULE]})
    assert _gateway_errors(route) == []
    route["spec"]["parentRefs"][1]["namespace"] = "a"
    assert _gateway_errors(route) == [
        'spec.parentRefs: Invalid value: "array": sectionName must be unique when '
        "parentRefs includes 2 or more references to the same parent"]
