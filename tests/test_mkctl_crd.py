"""mkctl on custom resources next to the real kubectl: a CustomResourceDefinition with
printer columns, short names, a category and the status and scale subresources, found
through discovery by each of its names, and read (get, describe, explain) and changed
(apply, apply --server-side, scale, delete) as kubectl reads and changes it; and a
cluster-scoped definition beside it, in the same category.

Definitions are cluster-wide and show in discovery: on the session's API server, each
one made here has a group of its own and leaves discovery before the module ends (see
below). The changing cases run on twin namespaces, one for each CLI.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.api_helpers import delete_definition, official_crd_clients
from tests.test_mkctl import Clis, Result, assert_same, normalized

# On the session's API server: every definition made here has a group of its own and
# is deleted at the end.

api_client, extensions, custom = official_crd_clients()

GROUP = "fleet.example.com"
# ../shared/data/crds from the checkout: /work/main's parent, or a worktree's ancestor
CRDS = next((parent / "shared/data/crds" for parent in Path(__file__).resolve().parents
             if (parent / "shared/data/crds").is_dir()), None)
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
RESOURCE_VERSION = re.compile(r'(resourceVersion"?: "?)\d+')

DEFINITION: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP, "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "listKind": "WidgetList", "shortNames": ["wd"],
                  "categories": ["all", "fleet"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector"}},
            "additionalPrinterColumns": [
                {"name": "Color", "type": "string", "jsonPath": ".spec.color",
                 "description": "The widget's color"},
                {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                {"name": "Ready", "type": "integer", "jsonPath": ".status.replicas",
                 "priority": 1},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
            "schema": {"openAPIV3Schema": {
                "type": "object", "description": "A Widget is a thing the fleet makes.",
                "properties": {
                    "spec": {"type": "object", "description": "What the widget should be.",
                             "required": ["color"],
                             "properties": {
                                 "color": {"type": "string", "enum": ["red", "blue"],
                                           "description": "The widget's color."},
                                 "replicas": {"type": "integer", "minimum": 0,
                                              "description": "How many to make."},
                                 "parts": {"type": "array", "items": {
                                     "type": "object", "properties": {
                                         "name": {"type": "string"},
                                         "count": {"type": "integer"}}}}}},
                    "status": {"type": "object", "properties": {
                        "replicas": {"type": "integer"},
                        "selector": {"type": "string"}}}}}},
        }]}}


# A cluster-scoped kind of the same group and category.
DEPOTS: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"depots.{GROUP}"},
    "spec": {
        "group": GROUP, "scope": "Cluster",
        "names": {"plural": "depots", "singular": "depot", "kind": "Depot",
                  "shortNames": ["dp"], "categories": ["fleet"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "additionalPrinterColumns": [
                {"name": "City", "type": "string", "jsonPath": ".spec.city"},
                {"name": "Open", "type": "boolean", "jsonPath": ".spec.open"},
                {"name": "Capacity", "type": "number", "jsonPath": ".spec.capacity",
                 "priority": 1}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "city": {"type": "string"}, "open": {"type": "boolean"},
                    "capacity": {"type": "number"}}}}}},
        }]}}
DEPOT = {"apiVersion": f"{GROUP}/v1", "kind": "Depot", "metadata": {"name": "north"},
         "spec": {"city": "Oslo", "open": True, "capacity": 2.5}}


def widget(name: str, color: str, replicas: int, **labels: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
            "metadata": {"name": name, "labels": labels},
            "spec": {"color": color, "replicas": replicas,
                     "parts": [{"name": "bolt", "count": 4}]}}


class World:
    """The definition, established, and two namespaces of widgets for the reading cases."""

    def __init__(self, clis: Clis, files: Path) -> None:
        self.clis, self.files = clis, files
        self.ident = uuid.uuid4().hex[:6]
        self.namespace, self.other = f"crd-{self.ident}", f"crd-{self.ident}-b"

    def setup(self) -> None:
        for name, definition in (("widgets", DEFINITION), ("depots", DEPOTS)):
            crd = self.files / f"{name}.json"
            crd.write_text(json.dumps(definition))
            self.must("apply", "-f", str(crd))
            self.must("wait", "--for=condition=Established", f"crd/{name}.{GROUP}",
                      "--timeout=60s")
        (self.files / "depot.json").write_text(json.dumps(DEPOT))
        self.must("create", "-f", str(self.files / "depot.json"))
        for namespace, widgets in ((self.namespace, [widget("alpha", "red", 2, tier="a"),
                                                    widget("beta", "blue", 1, tier="b")]),
                                   (self.other, [widget("gamma", "red", 3, tier="a")])):
            self.must("create", "namespace", namespace)
            listed = self.files / f"{namespace}.json"
            listed.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                          "items": widgets}))
            self.must("create", "-n", namespace, "-f", str(listed))
        self.must("patch", "-n", self.namespace, "wd", "alpha", "--subresource=status",
                  "--type=merge", "-p", '{"status":{"replicas":2,"selector":"tier=a"}}')

    def must(self, *args: str) -> Result:
        done = self.clis.kubectl(*args)
        assert done.code == 0, done.err
        return done


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("crd-manifests")


@pytest.fixture(scope="module")
def world(kubeconfig: Path, files: Path, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[World]:
    clis = Clis(kubeconfig, tmp_path_factory.mktemp("mkctl-crd-cache"))
    world = World(clis, files)
    try:
        world.setup()
        yield world
    finally:
        for namespace in (world.namespace, world.other):
            clis.kubectl("delete", "namespace", namespace, "--wait=false",
                         "--ignore-not-found")
        # the next module on this server may start a client's discovery at once
        with config.new_client_from_config(config_file=str(kubeconfig)) as api_client:
            extensions = client.ApiextensionsV1Api(api_client)
            for name in ("widgets", "depots"):
                delete_definition(extensions, f"{name}.{GROUP}", ignore_not_found=True)


READING = [
    "get widgets",
    "get wd",
    "get widget alpha",
    "get Widget",
    f"get widgets.{GROUP}",
    f"get widgets.v1.{GROUP}",
    "get wd -o wide",
    "get wd alpha -o yaml",
    "get wd -o json",
    "get wd -o name",
    "get wd -l tier=a",
    "get wd -A -l tier=a",
    "get wd --show-labels",
    "get wd -o custom-columns=NAME:.metadata.name,READY:.status.replicas",
    "get wd alpha -o jsonpath={.status.selector}",
    "get all",
    "get fleet",
    "get wd nothing",
    "get wd --sort-by=.spec.replicas",
    "get wd --sort-by={.spec.color} -o name",
    "get wd -A --sort-by=.spec.replicas -o wide",
    "get wd --sort-by=.status.replicas",
    "get wd -o json --sort-by=.spec.replicas",
    "get wd alpha beta --sort-by=.spec.replicas",
    "get wd,dp --sort-by=.metadata.name",
    "get wd --sort-by=.spec.nothing",
    "get wd -o yaml --sort-by=.spec.nothing",
    "describe wd alpha",
    "describe widgets",
    "get depots",
    "get dp -o wide",
    "get dp north -o yaml",
    "describe dp north",
    "explain dp.spec",
    "explain widgets",
    "explain wd.spec",
    "explain wd.spec.color",
    "explain wd.spec.parts",
    "explain wd.metadata",
    "explain widgets --recursive",
    "explain widgets --api-version=fleet.example.com/v1",
    "explain deployments.spec.strategy",
    f"explain widgets.{GROUP}",
    f"explain widgets.{GROUP}.spec.color",
    "explain wd.spec.parts.name",
    "explain Widget",
    "explain wd.spec.nothing",
    "explain nothing",
    "explain",
    "explain wd svc",
    "explain wd -o nothing",
    "scale dp north --replicas=2",
    f"api-resources --api-group={GROUP} -o wide",
    "api-resources --categories=fleet",
    "api-resources --namespaced=false --api-group=" + GROUP,
]
# The cases where kubectl fails (and mkctl must fail alike).
# kubectl sorts the rows of one Table; several Tables it sorts as objects, which have none
# of the rows' fields.
FAILING = {"get wd nothing", "get wd alpha beta --sort-by=.spec.replicas",
           "get wd,dp --sort-by=.metadata.name", "get wd -o yaml --sort-by=.spec.nothing",
           "explain wd.spec.nothing", "explain nothing", "explain",
           "explain wd svc", "explain wd -o nothing", "scale dp north --replicas=2"}


@pytest.mark.parametrize("case", READING)
def test_reading_custom_resources_prints_what_kubectl_prints(world: World, case: str) -> None:
    args = case.split()
    if "-A" not in args and args[0] != "explain":
        args += ["-n", world.namespace]
    expected, actual = world.clis.compare(*args)
    assert (expected.code != 0) == (case in FAILING), expected.err
    assert_same(expected, actual)


# What the second apply changes: a value, a label dropped, a list replaced whole.
APPLIED = widget("alpha", "red", 2, tier="a", keep="yes")
CHANGED = {**widget("alpha", "blue", 5, tier="a"),
           "spec": {"color": "blue", "replicas": 5, "parts": [{"name": "nut", "count": 2}]}}

CHANGING = [
    # (what both run first, the command, the command that shows the result)
    ([], "apply -f {files}/alpha.json", "get wd -o yaml"),
    (["apply -f {files}/alpha.json"], "apply -f {files}/alpha-v2.json", "get wd -o yaml"),
    ([], "apply --server-side -f {files}/alpha.json", "get wd -o yaml"),
    (["apply --server-side -f {files}/alpha.json"],
     "apply --server-side -f {files}/alpha-v2.json", "get wd -o yaml"),
    (["apply -f {files}/alpha.json"], "scale wd alpha --replicas=4", "get wd -o yaml"),
    (["apply -f {files}/alpha.json"], "scale wd alpha --replicas=4 --current-replicas=9",
     "get wd -o yaml"),
    (["apply -f {files}/alpha.json"], "delete wd alpha", "get wd"),
    (["apply -f {files}/alpha.json"], "delete widgets --all", "get wd"),
    ([], "delete wd nothing", "get wd"),
    (["apply -f {files}/alpha.json"], "delete -f {files}/alpha.json", "get wd"),
    (["apply -f {files}/alpha.json"], "apply -f {files}/alpha.json", "get wd -o yaml"),
    (["apply -f {files}/alpha.json"], "apply -f {files}/alpha-v2.json --dry-run=server",
     "get wd -o yaml"),
    (["apply -f {files}/alpha.json"], "label wd alpha keep- size=big", "get wd -o yaml"),
    (["apply -f {files}/alpha.json"], "annotate wd alpha note=hi", "get wd -o yaml"),
]


def masked(result: Result, namespace: str) -> Result:
    def clean(text: str) -> str:
        text = text.replace(namespace, "NS")
        return RESOURCE_VERSION.sub(r"\1RV", TIMESTAMP.sub("TIME", UID.sub("UID", text)))

    return normalized(Result(clean(result.out), clean(result.err), result.code))


@pytest.mark.parametrize(("setup", "case", "check"), CHANGING)
def test_changing_custom_resources_as_kubectl(world: World, setup: list[str], case: str,
                                              check: str) -> None:
    (world.files / "alpha.json").write_text(json.dumps(APPLIED))
    (world.files / "alpha-v2.json").write_text(json.dumps(CHANGED))
    ident = uuid.uuid4().hex[:6]
    twins = {"kubectl": f"w-{ident}-k", "mkctl": f"w-{ident}-m"}
    results: dict[str, tuple[Result, Result]] = {}
    try:
        for cli, namespace in twins.items():
            world.must("create", "namespace", namespace)
            for command in setup:
                world.must(*command.format(files=world.files).split(), "-n", namespace)
            args = [*case.format(files=world.files).split(), "-n", namespace]
            done = (world.clis.kubectl(*args) if cli == "kubectl"
                    else world.clis.mkctl(*args))
            shown = world.must(*check.split(), "-n", namespace, "--ignore-not-found")
            results[cli] = (masked(done, namespace), masked(shown, namespace))
    finally:
        for namespace in twins.values():
            world.clis.kubectl("delete", "namespace", namespace, "--wait=false")
    assert_same(results["kubectl"][0], results["mkctl"][0])
    assert_same(results["kubectl"][1], results["mkctl"][1])


def test_a_definition_made_after_discovery_was_cached_is_found_by_its_names(
        world: World, extensions: client.ApiextensionsV1Api) -> None:
    """Both CLIs cache discovery; a name the cache lacks makes each fetch it again once."""
    for args in (["get", "pods", "-n", world.namespace], ["get", "wd", "-n", world.namespace]):
        assert_same(*world.clis.compare(*args))
    group = f"g{world.ident}.example.com"
    gadgets = json.loads(json.dumps(DEFINITION).replace(GROUP, group).replace(
        "widget", "gadget").replace("Widget", "Gadget").replace('"wd"', '"gd"'))
    (world.files / "gadgets.json").write_text(json.dumps(gadgets))
    world.must("apply", "-f", str(world.files / "gadgets.json"))
    try:
        world.must("wait", "--for=condition=Established", f"crd/gadgets.{group}",
                   "--timeout=60s")
        for args in (["get", "gd", "-n", world.namespace], ["explain", "gadgets.spec"]):
            expected, actual = world.clis.compare(*args)
            assert expected.code == 0, expected.err
            assert_same(expected, actual)
    finally:
        delete_definition(extensions, f"gadgets.{group}")


# Real-world definitions: deep schemas, maps, lists of objects, enums, long descriptions.
REAL_WORLD = {"cert-manager/cert-manager.io_certificates.yaml": "certificates.cert-manager.io",
              "gateway-api/gateway.networking.k8s.io_gatewayclasses.yaml":
                  "gatewayclasses.gateway.networking.k8s.io",
              "gateway-api/gateway.networking.k8s.io_gateways.yaml":
                  "gateways.gateway.networking.k8s.io",
              "gateway-api/gateway.networking.k8s.io_httproutes.yaml":
                  "httproutes.gateway.networking.k8s.io",
              "prometheus-operator/monitoring.coreos.com_servicemonitors.yaml":
                  "servicemonitors.monitoring.coreos.com"}
CERTIFICATE = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
               "metadata": {"name": "web"},
               "spec": {"secretName": "web-tls", "dnsNames": ["a.example.com", "b.example.com"],
                        "issuerRef": {"name": "ca", "kind": "ClusterIssuer"},
                        "privateKey": {"algorithm": "ECDSA", "size": 256},
                        "duration": "2160h"}}
CERTIFICATE_STATUS = {"status": {
    "conditions": [{"type": "Ready", "status": "True", "reason": "Ready",
                    "message": "Certificate is up to date and has not expired",
                    "lastTransitionTime": "2026-11-29T00:00:00Z"}],
    "notAfter": "2027-02-27T00:00:00Z", "revision": 1}}
REAL_WORLD_CASES = [
    "explain certificates", "explain certificates.spec.privateKey",
    "explain certificates --recursive", "explain certificates.status.conditions",
    "explain httproutes.spec.rules", "explain httproutes.spec.rules.matches.path.type",
    "explain httproutes --recursive", "explain servicemonitors.spec.endpoints",
    "explain servicemonitors --recursive",
    "get certificates -o wide", "get cert web -o yaml", "describe certificate web",
    "get httproutes,gateways -o wide", "get gatewayclasses", "get gateway-api",
    "describe httproute http-app-1", "describe gateway my-gateway",
    "describe gatewayclass example"]


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds")
def test_real_world_custom_resources_read_as_kubectl_reads_them(
        world: World, extensions: client.ApiextensionsV1Api) -> None:
    """cert-manager's, Gateway API's and prometheus-operator's definitions, with Gateway
    API's basic-http example and a Certificate whose status says it is ready."""
    assert CRDS is not None
    namespace = world.namespace
    try:
        for path, name in REAL_WORLD.items():
            world.must("create", "-f", str(CRDS / path))
            world.must("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
        world.must("apply", "-n", namespace, "-f",
                   str(CRDS / "gateway-api/examples/basic-http.yaml"))
        (world.files / "certificate.json").write_text(json.dumps(CERTIFICATE))
        world.must("apply", "-n", namespace, "-f", str(world.files / "certificate.json"))
        world.must("patch", "-n", namespace, "certificate", "web", "--subresource=status",
                   "--type=merge", "-p", json.dumps(CERTIFICATE_STATUS))
        for case in REAL_WORLD_CASES:
            expected, actual = world.clis.compare(*case.split(), "-n", namespace)
            assert expected.code == 0, expected.err
            assert_same(expected, actual)
    finally:
        for name in REAL_WORLD.values():
            delete_definition(extensions, name, ignore_not_found=True)
