"""The real-world CRDs in the shared data (../shared/data/crds, see its README): every
version's schema is structural, and gateway-api's examples validate against their CRD's
schema with nothing pruned (CEL rules, x-kubernetes-validations, are not checked here)."""

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
        '"Exact", "PathPrefix", "RegularExpression"']


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
