"""networking.k8s.io/v1 (Ingress, IngressClass, NetworkPolicy) through the real kubectl and
the official Python client, with upstream's defaults, validation and table columns.

`kubectl create ingress` sends its object as protobuf (client-go's clientset), so these
tests also read minikube_py/api/protobuf.py's networking messages.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client import ApiException

from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig
from tests.test_mkctl import Clis, assert_same

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

NETWORK_POLICY = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web-egress
spec:
  podSelector:
    matchLabels:
      app: web
  egress:
  - to:
    - ipBlock:
        cidr: 10.0.0.0/8
        except: [10.1.0.0/16]
    ports:
    - port: 53
"""


def get_json(kubectl: Kubectl, *args: str) -> dict[str, Any]:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def table(text: str) -> list[list[str]]:
    """`kubectl get` output as rows of cells (columns are two or more spaces apart), the
    AGE cell dropped: the clock changes it."""
    return [re.split(r"\s{2,}", line.strip())[:-1] for line in text.strip().splitlines()]


@pytest.fixture
def unique() -> str:
    """A name for a cluster-scoped object, unique to this test."""
    return f"net-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def ingress_classes(kubectl: Kubectl) -> Iterator[list[str]]:
    """IngressClasses (cluster-scoped) to delete when the test ends."""
    names: list[str] = []
    yield names
    for name in names:
        kubectl("delete", "ingressclass", name, "--ignore-not-found", check=False)


@pytest.fixture
def networking(kubeconfig: Path) -> Iterator[client.NetworkingV1Api]:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.NetworkingV1Api(api)
    api.close()


# --- kubectl ---------------------------------------------------------------------------


def test_api_resources_lists_the_group_with_kubectls_short_names(kubectl: Kubectl) -> None:
    out = kubectl("api-resources", "--api-group=networking.k8s.io", "--no-headers").stdout
    rows = sorted(line.split() for line in out.strip().splitlines())

    assert rows == [
        ["ingressclasses", "networking.k8s.io/v1", "false", "IngressClass"],
        ["ingresses", "ing", "networking.k8s.io/v1", "true", "Ingress"],
        ["networkpolicies", "netpol", "networking.k8s.io/v1", "true", "NetworkPolicy"],
    ]


def test_kubectl_explain_reads_the_groups_openapi(kubectl: Kubectl) -> None:
    out = kubectl("explain", "ingress.spec.rules.http.paths.pathType").stdout

    assert out.startswith("GROUP:      networking.k8s.io\nKIND:       Ingress\n"
                          "VERSION:    v1\n\nFIELD: pathType <string>\n")


def test_kubectl_create_ingress_stores_an_exact_path_without_defaulting_it(
        kubectl: Kubectl, namespace: str) -> None:
    out = kubectl("create", "ingress", "web", "--rule=foo.com/=svc:80", "-n", namespace)

    assert out.stdout == "ingress.networking.k8s.io/web created\n"
    ingress = get_json(kubectl, "ing", "web", "-n", namespace)
    assert ingress["spec"] == {"rules": [{"host": "foo.com", "http": {"paths": [{
        "path": "/", "pathType": "Exact",
        "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]}
    assert ingress["status"] == {"loadBalancer": {}}
    assert ingress["metadata"]["generation"] == 1


def test_kubectl_get_ing_prints_class_hosts_address_and_ports(
        kubectl: Kubectl, namespace: str) -> None:
    kubectl("create", "ingress", "web", "--rule=foo.com/=svc:80", "-n", namespace)
    kubectl("create", "ingress", "secure", "--class=nginx", "--rule=a.com/api*=api:http,tls",
            "--rule=b.com/=web:8080", "--default-backend=web:80", "-n", namespace)

    out = kubectl("get", "ing", "-n", namespace).stdout

    assert table(out) == [
        ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS"],
        ["secure", "nginx", "a.com,b.com", "80, 443"],
        ["web", "<none>", "foo.com", "80"],
    ]
    secure = get_json(kubectl, "ingress", "secure", "-n", namespace)["spec"]
    assert secure["rules"][0]["http"]["paths"][0] == {
        "path": "/api", "pathType": "Prefix",
        "backend": {"service": {"name": "api", "port": {"name": "http"}}}}
    assert secure["tls"] == [{"hosts": ["a.com"]}]


def test_server_side_apply_replaces_the_atomic_rule_lists(
        kubectl: Kubectl, namespace: str) -> None:
    def manifest(*paths: str) -> str:
        return json.dumps({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"},
            "spec": {"rules": [{"host": "foo.com", "http": {"paths": [
                {"path": path, "pathType": "Prefix",
                 "backend": {"service": {"name": "svc", "port": {"number": 80}}}}
                for path in paths]}}]}})

    kubectl("apply", "--server-side", "-n", namespace, "-f", "-", input=manifest("/a", "/b"))
    out = kubectl("apply", "--server-side", "-n", namespace, "-f", "-", input=manifest("/c"))

    assert out.stdout == "ingress.networking.k8s.io/web serverside-applied\n"
    stored = get_json(kubectl, "ingress", "web", "-n", namespace)
    assert [path["path"] for path in stored["spec"]["rules"][0]["http"]["paths"]] == ["/c"]
    assert stored["metadata"]["generation"] == 2


def test_the_load_balancer_address_comes_from_the_status_subresource(
        kubectl: Kubectl, namespace: str) -> None:
    kubectl("create", "ingress", "web", "--rule=foo.com/=svc:80", "-n", namespace)
    status = {"status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"},
                                                      {"hostname": "lb.example.com"}]}}}

    kubectl("patch", "ingress", "web", "-n", namespace, "--subresource=status",
            "--type=merge", "-p", json.dumps(status))
    kubectl("patch", "ingress", "web", "-n", namespace, "--type=merge",
            "-p", json.dumps({"status": {"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}}}))

    assert table(kubectl("get", "ing", "web", "-n", namespace).stdout)[1] == [
        "web", "<none>", "foo.com", "10.0.0.9,lb.example.com", "80"]


def test_an_ingress_path_needs_a_path_type_and_a_backend(
        kubectl: Kubectl, namespace: str) -> None:
    bad = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "bad"},
           "spec": {"rules": [{"host": "foo.com", "http": {"paths": [
               {"path": "/", "backend": {"service": {"name": "svc", "port": {"number": 80}}}},
               {"path": "/x", "pathType": "Regex", "backend": {}},
               {"path": "rel", "pathType": "Prefix",
                "backend": {"service": {"name": "svc"}}}]}}]}}

    out = kubectl("create", "-f", "-", "-n", namespace, input=json.dumps(bad), check=False)

    assert out.returncode == 1
    assert out.stderr == (
        'The Ingress "bad" is invalid: \n'
        "* spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified\n"
        '* spec.rules[0].http.paths[1].pathType: Unsupported value: "Regex": supported '
        'values: "Exact", "ImplementationSpecific", "Prefix"\n'
        '* spec.rules[0].http.paths[1].backend: Invalid value: "": resource or service '
        "backend is required\n"
        '* spec.rules[0].http.paths[2].path: Invalid value: "rel": must be an absolute path\n'
        "* spec.rules[0].http.paths[2].backend: Required value: port name or number is "
        "required\n")


def test_an_ingress_without_rules_needs_a_default_backend(
        kubectl: Kubectl, namespace: str) -> None:
    empty = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
             "metadata": {"name": "empty"}, "spec": {}}

    out = kubectl("create", "-f", "-", "-n", namespace, input=json.dumps(empty), check=False)

    assert out.stderr == ('The Ingress "empty" is invalid: spec: Invalid value: null: '
                          "either `defaultBackend` or `rules` must be specified\n")


def test_network_policy_types_default_from_the_rules_and_get_prints_the_selector(
        kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "-f", "-", "-n", namespace, input=NETWORK_POLICY)
    kubectl("create", "-f", "-", "-n", namespace, input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "deny-all"}, "spec": {"podSelector": {}}}))

    policy = get_json(kubectl, "netpol", "web-egress", "-n", namespace)["spec"]
    deny_all = get_json(kubectl, "netpol", "deny-all", "-n", namespace)["spec"]

    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert policy["egress"][0]["ports"] == [{"port": 53, "protocol": "TCP"}]
    assert deny_all == {"podSelector": {}, "policyTypes": ["Ingress"]}
    assert table(kubectl("get", "netpol", "-n", namespace).stdout) == [
        ["NAME", "POD-SELECTOR"], ["deny-all", "<none>"], ["web-egress", "app=web"]]


def test_network_policy_peers_and_ports_are_validated(
        kubectl: Kubectl, namespace: str) -> None:
    bad = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
           "metadata": {"name": "bad"},
           "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Sideways"],
                    "ingress": [{"from": [{}, {"ipBlock": {"cidr": "10.0.0.0/8"},
                                               "podSelector": {}}],
                                 "ports": [{"protocol": "ICMP", "port": "dns",
                                            "endPort": 60}]}]}}

    out = kubectl("create", "-f", "-", "-n", namespace, input=json.dumps(bad), check=False)

    assert out.stderr == (
        'The NetworkPolicy "bad" is invalid: \n'
        '* spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: '
        '"TCP", "UDP", "SCTP"\n'
        "* spec.ingress[0].ports[0].endPort: Invalid value: 60: may not be specified when "
        "`port` is non-numeric\n"
        "* spec.ingress[0].from[0]: Required value: must specify a peer\n"
        "* spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer\n"
        '* spec.policyTypes[1]: Unsupported value: "Sideways": supported values: '
        '"Ingress", "Egress"\n')


def test_ingress_class_parameters_default_to_cluster_scope(
        kubectl: Kubectl, unique: str, ingress_classes: list[str]) -> None:
    ingress_classes.append(unique)
    kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": unique},
        "spec": {"controller": "example.com/ingress-controller",
                 "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters",
                                "name": "external-lb"}}}))

    stored = get_json(kubectl, "ingressclass", unique)

    assert stored["spec"]["parameters"]["scope"] == "Cluster"
    assert table(kubectl("get", "ingressclass", unique).stdout) == [
        ["NAME", "CONTROLLER", "PARAMETERS"],
        [unique, "example.com/ingress-controller",
         "IngressParameters.k8s.example.com/external-lb"]]


def test_an_ingress_class_controller_is_domain_prefixed_and_never_changes(
        kubectl: Kubectl, unique: str, ingress_classes: list[str]) -> None:
    ingress_classes.append(unique)
    body = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": unique}, "spec": {"controller": "nginx"}}
    refused = kubectl("create", "-f", "-", input=json.dumps(body), check=False)
    body["spec"]["controller"] = "example.com/a"
    kubectl("create", "-f", "-", input=json.dumps(body))

    changed = kubectl("patch", "ingressclass", unique, "--type=merge",
                      "-p", '{"spec": {"controller": "example.com/b"}}', check=False)

    assert refused.stderr == (
        f'The IngressClass "{unique}" is invalid: spec.controller: Invalid value: "nginx": '
        'must be a domain-prefixed path (such as "acme.io/foo")\n')
    assert changed.stderr == (
        f'The IngressClass "{unique}" is invalid: spec.controller: Invalid value: '
        '"example.com/b": field is immutable\n')


def test_describe_ingress_prints_the_rules_and_their_backends(
        kubectl: Kubectl, namespace: str) -> None:
    kubectl("create", "ingress", "web", "--rule=foo.com/=svc:80", "-n", namespace)

    out = kubectl("describe", "ingress", "web", "-n", namespace).stdout

    assert [line.rstrip() for line in out.splitlines()] == [
        "Name:             web",
        "Labels:           <none>",
        f"Namespace:        {namespace}",
        "Address:",
        "Ingress Class:    <none>",
        "Default backend:  <default>",
        "Rules:",
        "  Host        Path  Backends",
        "  ----        ----  --------",
        "  foo.com",
        '              /   svc:80 (<error: services "svc" not found>)',
        "Annotations:  <none>",
        "Events:       <none>",
    ]


def test_apply_prune_with_the_default_allowlist_finds_every_kind(
        kubectl: Kubectl, namespace: str) -> None:
    """kubectl's default prune allowlist names networking.k8s.io/v1 Ingress: without the
    group, `apply --prune` stopped at `no matches for kind "Ingress"`."""
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "kept", "labels": {"app": "demo"}}}
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"name": "old", "labels": {"app": "demo"}},
               "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}
    both = {"apiVersion": "v1", "kind": "List", "items": [config_map, ingress]}
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(both))

    out = kubectl("apply", "--prune", "-l", "app=demo", "-n", namespace, "-f", "-",
                  input=json.dumps(config_map))

    assert out.stdout == ("configmap/kept unchanged\n"
                          "ingress.networking.k8s.io/old pruned\n")
    assert kubectl("get", "ing", "-n", namespace, check=False).stderr == (
        f"No resources found in {namespace} namespace.\n")


async def test_an_ingress_without_a_class_gets_the_newest_default_class(
        private_etcd: EtcdProcess, tmp_path: Path) -> None:
    """DefaultIngressClass admission, on a server of its own: a default class would
    change every other test's ingresses."""
    def ingress_class(name: str, default: str | None) -> str:
        annotations = {"ingressclass.kubernetes.io/is-default-class": default} if default \
            else {}
        return json.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                           "metadata": {"name": name, "annotations": annotations},
                           "spec": {"controller": "example.com/ingress"}})

    async with APIServerProcess([private_etcd.client_url], tmp_path / "api.log") as api:
        config_file = write_kubeconfig(tmp_path / "kubeconfig", api.url)

        def run(*args: str, input: str | None = None) -> str:
            done = subprocess.run([str(Path(sys.executable).with_name("kubectl")),
                                   f"--kubeconfig={config_file}", *args], input=input,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout

        def class_of(name: str) -> str:
            return run("get", "ingress", name, "-o", "jsonpath={.spec.ingressClassName}")

        run("create", "-f", "-", input=ingress_class("plain", None))
        run("create", "ingress", "before", "--rule=foo.com/=svc:80")
        run("create", "-f", "-", input=ingress_class("old", "true"))
        await asyncio.sleep(1.1)  # creationTimestamp counts seconds: "new" is newer
        run("create", "-f", "-", input=ingress_class("new", "true"))
        run("create", "-f", "-", input=ingress_class("no", "false"))
        run("create", "ingress", "after", "--rule=foo.com/=svc:80")
        run("create", "ingress", "chosen", "--class=plain", "--rule=foo.com/=svc:80")
        run("create", "ingress", "legacy", "--rule=foo.com/=svc:80",
            "--annotation=kubernetes.io/ingress.class=nginx")

        assert [class_of(name) for name in ("before", "after", "chosen", "legacy")] == [
            "", "new", "plain", ""]


# --- mkctl next to kubectl ------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ("get", "ing"), ("get", "ingress", "-o", "wide"), ("get", "netpol"),
    ("describe", "ingress", "web"), ("describe", "ingress", "secure"),
    ("describe", "ingress", "fallback"), ("describe", "ing"),
    ("describe", "netpol", "web-egress"), ("describe", "netpol", "mixed"),
    ("describe", "netpol"),
])
def test_mkctl_prints_what_kubectl_prints(
        kubectl: Kubectl, kubeconfig: Path, tmp_path: Path, namespace: str,
        command: tuple[str, ...]) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"},
               "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}
    slice_ = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
              "metadata": {"name": "api-1", "labels": {"kubernetes.io/service-name": "api"}},
              "addressType": "IPv4", "ports": [{"name": "http", "port": 8080}],
              "endpoints": [{"addresses": ["10.244.0.7"], "conditions": {"ready": True}}]}
    for body in (service, slice_):
        kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(body))
    kubectl("create", "ingress", "web", "--rule=foo.com/=svc:80", "-n", namespace)
    kubectl("create", "ingress", "secure", "--class=nginx", "--rule=a.com/api*=api:http,tls=cert",
            "--rule=/static=api:80", "--annotation=team=web", "-n", namespace)
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "fallback", "labels": {"app": "web"}},
        "spec": {"defaultBackend": {"resource": {"apiGroup": "k8s.example.com",
                                                 "kind": "Bucket", "name": "static"}}}}))
    kubectl("apply", "-n", namespace, "-f", "-", input=NETWORK_POLICY)
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "mixed", "labels": {"app": "web"}},
        "spec": {"podSelector": {}, "ingress": [
            {"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}},
                       "podSelector": {"matchLabels": {"role": "client"}}},
                      {"podSelector": {}}],
             "ports": [{"port": "http"}, {"port": 8000, "endPort": 8100, "protocol": "UDP"}]},
            {}]}}))
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "egress-only"},
        "spec": {"podSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
                 "policyTypes": ["Egress"], "egress": [{"to": [
                     {"namespaceSelector": {}}, {"ipBlock": {"cidr": "0.0.0.0/0"}}]}]}}))
    clis = Clis(kubeconfig, tmp_path)

    expected, actual = clis.compare(*command, "-n", namespace)

    assert expected.code == 0, expected.err
    assert_same(expected, actual)


def test_mkctl_describes_ingress_classes_as_kubectl(
        kubectl: Kubectl, kubeconfig: Path, tmp_path: Path, unique: str,
        ingress_classes: list[str]) -> None:
    ingress_classes.append(unique)
    kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": unique, "labels": {"app": "web"}},
        "spec": {"controller": "example.com/ingress",
                 "parameters": {"apiGroup": "k8s.example.com", "kind": "Params",
                                "name": "lb", "scope": "Namespace", "namespace": "default"}}}))
    clis = Clis(kubeconfig, tmp_path)

    for command in (("describe", "ingressclass", unique), ("get", "ingressclass", unique)):
        expected, actual = clis.compare(*command)
        assert expected.code == 0, expected.err
        assert_same(expected, actual)


# --- the official Python client --------------------------------------------------------


def test_python_client_creates_reads_and_lists_ingresses(
        networking: client.NetworkingV1Api, namespace: str) -> None:
    backend = client.V1IngressBackend(service=client.V1IngressServiceBackend(
        name="web", port=client.V1ServiceBackendPort(number=80)))
    body = client.V1Ingress(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1IngressSpec(rules=[client.V1IngressRule(
            host="foo.com", http=client.V1HTTPIngressRuleValue(paths=[client.V1HTTPIngressPath(
                path="/", path_type="Prefix", backend=backend)]))]))

    networking.create_namespaced_ingress(namespace, body)
    read = networking.read_namespaced_ingress("web", namespace)
    listed = networking.list_namespaced_ingress(namespace)

    assert read.spec.rules[0].http.paths[0].backend.service.port.number == 80
    assert read.status.load_balancer.ingress is None
    assert [item.metadata.name for item in listed.items] == ["web"]


def test_python_client_creates_ingress_classes_and_network_policies(
        networking: client.NetworkingV1Api, namespace: str, unique: str,
        ingress_classes: list[str]) -> None:
    ingress_classes.append(unique)
    networking.create_ingress_class(client.V1IngressClass(
        metadata=client.V1ObjectMeta(name=unique),
        spec=client.V1IngressClassSpec(controller="example.com/ingress")))
    networking.create_namespaced_network_policy(namespace, client.V1NetworkPolicy(
        metadata=client.V1ObjectMeta(name="allow-dns"),
        spec=client.V1NetworkPolicySpec(
            pod_selector=client.V1LabelSelector(match_labels={"app": "web"}),
            egress=[client.V1NetworkPolicyEgressRule(
                ports=[client.V1NetworkPolicyPort(port=53, protocol="UDP")])])))

    ingress_class = networking.read_ingress_class(unique)
    policy = networking.read_namespaced_network_policy("allow-dns", namespace)
    with pytest.raises(ApiException) as missing_selector:
        networking.create_namespaced_network_policy(namespace, client.V1NetworkPolicy(
            metadata=client.V1ObjectMeta(name="bad"),
            spec=client.V1NetworkPolicySpec(pod_selector=client.V1LabelSelector(
                match_expressions=[client.V1LabelSelectorRequirement(
                    key="app", operator="Near")]))))

    assert ingress_class.spec.controller == "example.com/ingress"
    assert policy.spec.policy_types == ["Ingress", "Egress"]
    assert [item.metadata.name for item in
            networking.list_namespaced_network_policy(namespace).items] == ["allow-dns"]
    assert missing_selector.value.status == 422
    assert "spec.podSelector.matchExpressions[0].operator" in missing_selector.value.body
