"""The real kubectl 1.37 against our API server, driven the way a user drives it."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from minikube_py.cluster.apiserver import APIServerProcess
from tests.api_helpers import API, pod

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

WEB_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
    tier: frontend
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports:
        - containerPort: 80
      - name: sidecar
        image: busybox:1.36
        command: ["sleep", "infinity"]
"""

WEB_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  color: blue
  size: large
"""

WEB_SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
"""

WEB_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web-pod
  labels:
    app: web
spec:
  containers:
  - name: nginx
    image: nginx:1.25
"""

DB_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: db-pod
  labels:
    app: db
spec:
  containers:
  - name: postgres
    image: postgres:16
"""

WEB_APP = "---\n".join([WEB_DEPLOYMENT, WEB_CONFIGMAP, WEB_SERVICE, WEB_POD])


# -- helpers ---------------------------------------------------------------------------------

def apply(kubectl: Kubectl, namespace: str, manifest: str, *, check: bool = True
          ) -> subprocess.CompletedProcess[str]:
    """`kubectl apply -f -` with the manifest on stdin (validation left at its default)."""
    return kubectl("apply", "-n", namespace, "-f", "-", input=manifest, check=check)


def create(kubectl: Kubectl, namespace: str, manifest: str, *, check: bool = True
           ) -> subprocess.CompletedProcess[str]:
    """`kubectl create -f -` with the manifest on stdin."""
    return kubectl("create", "-n", namespace, "-f", "-", input=manifest, check=check)


def get_json(kubectl: Kubectl, namespace: str, *what: str) -> dict[str, Any]:
    """`kubectl get WHAT -o json`, decoded."""
    return json.loads(kubectl("get", "-n", namespace, *what, "-o", "json").stdout)


def table(output: str) -> tuple[list[str], list[list[str]]]:
    """Split kubectl's table output into the header and the rows (columns are 2+ spaces apart)."""
    lines = [line for line in output.splitlines() if line.strip()]
    header = re.split(r"\s{2,}", lines[0].strip())
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[1:]]
    return header, rows


def row_named(rows: list[list[str]], name: str) -> list[str]:
    """The one table row whose first column (NAME) is name."""
    found = [row for row in rows if row[0] == name]
    assert len(found) == 1, f"expected one row named {name!r} in {rows}"
    return found[0]


def request_count(kubectl: Kubectl, resource: str, subresource: str) -> float:
    """Sum apiserver_request_total over all verbs and codes for one resource/subresource."""
    total = 0.0
    for line in kubectl("get", "--raw", "/metrics").stdout.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
        if labels.get("resource") == resource and labels.get("subresource") == subresource:
            total += float(line.rsplit(" ", 1)[1])
    return total


def assert_not_found(kubectl: Kubectl, namespace: str, kind: str, name: str) -> None:
    """`kubectl get` of the object fails with the server's NotFound."""
    result = kubectl("get", "-n", namespace, kind, name, check=False)
    assert result.returncode == 1
    assert "(NotFound)" in result.stderr


# -- cluster information ---------------------------------------------------------------------

def test_get_namespace_shows_it_active(kubectl: Kubectl, namespace: str) -> None:
    header, rows = table(kubectl("get", "namespace", namespace).stdout)
    assert header == ["NAME", "STATUS", "AGE"]
    assert row_named(rows, namespace)[:2] == [namespace, "Active"]


def test_create_namespace_then_get_shows_it_active(kubectl: Kubectl) -> None:
    name = f"kubectl-ns-{uuid.uuid4().hex[:8]}"
    assert kubectl("create", "namespace", name).stdout.strip() == f"namespace/{name} created"
    header, rows = table(kubectl("get", "ns", name).stdout)
    assert header == ["NAME", "STATUS", "AGE"]
    assert row_named(rows, name)[:2] == [name, "Active"]


@pytest.mark.parametrize(
    ("name", "columns"),
    [
        ("pods", ["pods", "po", "v1", "true", "Pod"]),
        ("deployments", ["deployments", "deploy", "apps/v1", "true", "Deployment"]),
        ("services", ["services", "svc", "v1", "true", "Service"]),
        ("nodes", ["nodes", "no", "v1", "false", "Node"]),
        ("namespaces", ["namespaces", "ns", "v1", "false", "Namespace"]),
    ],
)
def test_api_resources_lists_short_names_group_versions_and_scope(
        kubectl: Kubectl, name: str, columns: list[str]) -> None:
    output = kubectl("api-resources").stdout
    assert output.splitlines()[0].split() == [
        "NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    rows = [line.split() for line in output.splitlines()[1:]]
    assert row_named(rows, name) == columns


def test_api_versions_lists_core_and_group_versions(kubectl: Kubectl) -> None:
    versions = kubectl("api-versions").stdout.split()
    for version in ("v1", "apps/v1", "batch/v1"):
        assert version in versions


def test_version_shows_the_server_version(kubectl: Kubectl) -> None:
    assert "Server Version: v1.37" in kubectl("version").stdout
    both = json.loads(kubectl("version", "-o", "json").stdout)
    assert both["serverVersion"]["major"] == "1"
    assert both["serverVersion"]["gitVersion"].startswith("v1.37")


def test_get_raw_metrics_serves_request_counters(kubectl: Kubectl) -> None:
    metrics = kubectl("get", "--raw", "/metrics").stdout
    assert "apiserver_request_total" in metrics
    inflight = {line.split('"')[1]: float(line.rsplit(" ", 1)[1]) for line in
                metrics.splitlines()
                if line.startswith("apiserver_current_inflight_requests{")}
    # The scrape itself is a read-only request in flight when the gauge is read.
    assert inflight["readOnly"] >= 1 and inflight["mutating"] >= 0


def test_get_raw_readyz_prints_ok(kubectl: Kubectl) -> None:
    assert kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"


# -- apply -----------------------------------------------------------------------------------

def test_apply_creates_objects_with_defaults_filled(kubectl: Kubectl, namespace: str) -> None:
    output = apply(kubectl, namespace, WEB_APP).stdout.splitlines()
    assert output == ["deployment.apps/web created", "configmap/web-config created",
                      "service/web created", "pod/web-pod created"]

    deployment = get_json(kubectl, namespace, "deployment", "web")
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    assert deployment["spec"]["revisionHistoryLimit"] == 10
    assert deployment["spec"]["progressDeadlineSeconds"] == 600
    template = deployment["spec"]["template"]["spec"]
    assert template["restartPolicy"] == "Always"
    assert template["containers"][0]["ports"][0]["protocol"] == "TCP"
    last_applied = json.loads(deployment["metadata"]["annotations"][LAST_APPLIED])
    assert last_applied["spec"]["replicas"] == 2
    assert last_applied["metadata"]["namespace"] == namespace

    pod_spec = get_json(kubectl, namespace, "pod", "web-pod")["spec"]
    assert pod_spec["restartPolicy"] == "Always"
    assert pod_spec["dnsPolicy"] == "ClusterFirst"
    assert pod_spec["terminationGracePeriodSeconds"] == 30
    assert pod_spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert pod_spec["containers"][0]["terminationMessagePath"] == "/dev/termination-log"

    service = get_json(kubectl, namespace, "service", "web")["spec"]
    assert service["type"] == "ClusterIP"
    assert service["sessionAffinity"] == "None"
    assert service["ports"] == [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]

    assert get_json(kubectl, namespace, "configmap", "web-config")["data"] == {
        "color": "blue", "size": "large"}


def test_apply_again_stores_exactly_the_change(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, WEB_APP)
    kubectl("label", "-n", namespace, "deployment", "web", "owner=ops")
    new_image = "image: nginx:1.26\n        ports"
    changed = (WEB_APP.replace("image: nginx:1.25\n        ports", new_image)
               .replace("    tier: frontend\n", "")
               .replace("  color: blue\n", "  color: green\n"))

    output = apply(kubectl, namespace, changed).stdout.splitlines()
    assert output == ["deployment.apps/web configured", "configmap/web-config configured",
                      "service/web unchanged", "pod/web-pod unchanged"]

    deployment = get_json(kubectl, namespace, "deployment", "web")
    # tier was applied before and is gone now; owner was never applied, so apply keeps it.
    assert deployment["metadata"]["labels"] == {"app": "web", "owner": "ops"}
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("nginx", "nginx:1.26"), ("sidecar", "busybox:1.36")]
    assert containers[1]["command"] == ["sleep", "infinity"]
    assert deployment["metadata"]["generation"] == 2
    assert json.loads(deployment["metadata"]["annotations"][LAST_APPLIED])["spec"]["template"][
        "spec"]["containers"][0]["image"] == "nginx:1.26"
    assert get_json(kubectl, namespace, "configmap", "web-config")["data"] == {
        "color": "green", "size": "large"}
    assert get_json(kubectl, namespace, "pod", "web-pod")["spec"]["containers"][0][
        "image"] == "nginx:1.25"


def test_apply_orders_containers_as_the_manifest_lists_them(
        kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, WEB_DEPLOYMENT)
    nginx, sidecar = WEB_DEPLOYMENT.split("      - name: sidecar\n")
    swapped = nginx.replace("      - name: nginx\n", "      - name: sidecar\n" + sidecar
                            + "      - name: nginx\n")
    assert apply(kubectl, namespace, swapped).stdout.strip() == "deployment.apps/web configured"
    containers = get_json(kubectl, namespace, "deployment", "web")["spec"]["template"]["spec"][
        "containers"]
    assert [c["name"] for c in containers] == ["sidecar", "nginx"]
    assert containers[1]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_apply_rejects_an_unknown_field_and_creates_nothing(
        kubectl: Kubectl, namespace: str) -> None:
    manifest = WEB_DEPLOYMENT.replace("  replicas: 2\n", "  replicass: 2\n")
    result = apply(kubectl, namespace, manifest, check=False)
    assert result.returncode == 1
    assert 'unknown field "spec.replicass"' in result.stderr
    assert_not_found(kubectl, namespace, "deployment", "web")


def test_delete_f_removes_everything_the_file_applied(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, WEB_APP)
    output = kubectl("delete", "-n", namespace, "-f", "-", input=WEB_APP).stdout.splitlines()
    assert [line.split(" deleted")[0] for line in output] == [
        'deployment.apps "web"', 'configmap "web-config"', 'service "web"', 'pod "web-pod"']
    for kind, name in [("deployment", "web"), ("configmap", "web-config"), ("service", "web"),
                       ("pod", "web-pod")]:
        assert_not_found(kubectl, namespace, kind, name)


# -- get and its output formats --------------------------------------------------------------

@pytest.fixture
def web_app(kubectl: Kubectl, namespace: str) -> str:
    """The web application plus a db pod, applied in the test's namespace."""
    apply(kubectl, namespace, WEB_APP + "---\n" + DB_POD)
    return namespace


@pytest.mark.parametrize(
    ("what", "header", "name", "cells"),
    [
        (["pods"], ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
         "web-pod", ["0/1", "Pending", "0"]),
        (["pods", "-o", "wide"], ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                                  "NOMINATED NODE", "READINESS GATES"],
         "web-pod", ["0/1", "Pending", "0"]),
        (["deployments"], ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
         "web", ["0/2", "0", "0"]),
        (["configmaps"], ["NAME", "DATA", "AGE"], "web-config", ["2"]),
    ],
)
def test_get_prints_upstream_table_columns(
        kubectl: Kubectl, web_app: str, what: list[str], header: list[str], name: str,
        cells: list[str]) -> None:
    printed_header, rows = table(kubectl("get", "-n", web_app, *what).stdout)
    assert printed_header == header
    row = row_named(rows, name)
    assert row[1:1 + len(cells)] == cells
    assert re.fullmatch(r"\d+s", row[len(cells) + 1])


def test_get_pods_wide_shows_no_ip_or_node_for_an_unscheduled_pod(
        kubectl: Kubectl, web_app: str) -> None:
    _, rows = table(kubectl("get", "-n", web_app, "pods", "-o", "wide").stdout)
    assert row_named(rows, "web-pod")[5:] == ["<none>", "<none>", "<none>", "<none>"]


def test_get_services_shows_type_external_ip_and_ports(kubectl: Kubectl, web_app: str) -> None:
    header, rows = table(kubectl("get", "-n", web_app, "services").stdout)
    assert header == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    _, kind, _, external_ip, ports, _ = row_named(rows, "web")
    assert (kind, external_ip, ports) == ("ClusterIP", "<none>", "80/TCP")


def test_get_services_shows_the_allocated_cluster_ip(kubectl: Kubectl, web_app: str) -> None:
    _, rows = table(kubectl("get", "-n", web_app, "services").stdout)
    cluster_ip = row_named(rows, "web")[2]
    assert ipaddress.ip_address(cluster_ip)
    assert get_json(kubectl, web_app, "service", "web")["spec"]["clusterIPs"] == [cluster_ip]


def test_get_nodes_shows_status_roles_and_kubelet_version(kubectl: Kubectl) -> None:
    name = f"node-{uuid.uuid4().hex[:8]}"
    manifest = f"""\
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels:
    node-role.kubernetes.io/control-plane: ""
status:
  conditions:
  - type: Ready
    status: "True"
    reason: KubeletReady
  nodeInfo:
    kubeletVersion: v1.37.1
"""
    assert kubectl("create", "-f", "-", input=manifest).stdout.strip() == f"node/{name} created"
    try:
        header, rows = table(kubectl("get", "nodes", name).stdout)
        assert header == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
        row = row_named(rows, name)
        assert row[1:3] == ["Ready", "control-plane"]
        assert row[4] == "v1.37.1"
    finally:
        kubectl("delete", "node", name)


def test_get_all_namespaces_adds_a_namespace_column(kubectl: Kubectl, web_app: str) -> None:
    header, rows = table(kubectl("get", "pods", "-A").stdout)
    assert header == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    ours = sorted(row[1] for row in rows if row[0] == web_app)
    assert ours == ["db-pod", "web-pod"]


def test_get_with_label_selector_lists_only_matching_pods(kubectl: Kubectl, web_app: str) -> None:
    _, rows = table(kubectl("get", "-n", web_app, "pods", "-l", "app=web").stdout)
    assert [row[0] for row in rows] == ["web-pod"]
    _, rows = table(kubectl("get", "-n", web_app, "pods", "-l", "app!=web").stdout)
    assert [row[0] for row in rows] == ["db-pod"]


def test_get_show_labels_adds_a_labels_column(kubectl: Kubectl, web_app: str) -> None:
    header, rows = table(kubectl("get", "-n", web_app, "pods", "--show-labels").stdout)
    assert header[-1] == "LABELS"
    assert row_named(rows, "web-pod")[-1] == "app=web"


def test_get_output_name_json_yaml_and_jsonpath(kubectl: Kubectl, web_app: str) -> None:
    names = kubectl("get", "-n", web_app, "pods", "-o", "name").stdout.split()
    assert names == ["pod/db-pod", "pod/web-pod"]

    listed = get_json(kubectl, web_app, "pods")
    assert listed["kind"] == "List"
    assert [item["metadata"]["name"] for item in listed["items"]] == ["db-pod", "web-pod"]
    assert {item["kind"] for item in listed["items"]} == {"Pod"}

    one = yaml.safe_load(kubectl("get", "-n", web_app, "pod", "web-pod", "-o", "yaml").stdout)
    assert (one["apiVersion"], one["kind"]) == ("v1", "Pod")
    assert one["metadata"]["namespace"] == web_app
    assert one["status"]["phase"] == "Pending"

    jsonpath = kubectl("get", "-n", web_app, "pods",
                       "-o", "jsonpath={.items[*].metadata.name}").stdout
    assert jsonpath == "db-pod web-pod"


def test_get_all_lists_pods_services_and_deployments(kubectl: Kubectl, web_app: str) -> None:
    names = set(kubectl("get", "all", "-n", web_app, "-o", "name").stdout.split())
    assert {"pod/web-pod", "pod/db-pod", "service/web", "deployment.apps/web"} <= names
    assert "configmap/web-config" not in names


# -- changing objects ------------------------------------------------------------------------

def test_label_adds_refuses_silent_overwrite_overwrites_and_removes(
        kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, WEB_POD)
    labels = ["label", "-n", namespace, "pod", "web-pod"]

    assert kubectl(*labels, "tier=frontend").stdout.strip() == "pod/web-pod labeled"
    refused = kubectl(*labels, "tier=backend", check=False)
    assert refused.returncode == 1
    assert "'tier' already has a value (frontend), and --overwrite is false" in refused.stderr
    kubectl(*labels, "tier=backend", "--overwrite")
    assert get_json(kubectl, namespace, "pod", "web-pod")["metadata"]["labels"] == {
        "app": "web", "tier": "backend"}

    assert kubectl(*labels, "tier-").stdout.strip() == "pod/web-pod unlabeled"
    assert get_json(kubectl, namespace, "pod", "web-pod")["metadata"]["labels"] == {"app": "web"}


def test_annotate_sets_an_annotation(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, WEB_CONFIGMAP)
    result = kubectl("annotate", "-n", namespace, "configmap", "web-config",
                     "description=colours for the web tier")
    assert result.stdout.strip() == "configmap/web-config annotated"
    annotations = get_json(kubectl, namespace, "configmap", "web-config")["metadata"][
        "annotations"]
    assert annotations["description"] == "colours for the web tier"


@pytest.mark.parametrize(
    ("patch_type", "containers"),
    [
        # strategic merge: containers merge by name, so the sidecar stays
        ("strategic", [("nginx", "nginx:1.27"), ("sidecar", "busybox:1.36")]),
        # JSON merge patch (RFC 7386): a list is replaced as a whole
        ("merge", [("nginx", "nginx:1.27")]),
    ],
)
def test_patch_merges_container_lists_by_patch_type(
        kubectl: Kubectl, namespace: str, patch_type: str, containers: list[tuple[str, str]]
        ) -> None:
    apply(kubectl, namespace, WEB_DEPLOYMENT)
    body = {"spec": {"template": {"spec": {"containers": [
        {"name": "nginx", "image": "nginx:1.27"}]}}}}
    result = kubectl("patch", "-n", namespace, "deployment", "web", f"--type={patch_type}",
                     "-p", json.dumps(body))
    assert result.stdout.strip() == "deployment.apps/web patched"
    stored = get_json(kubectl, namespace, "deployment", "web")["spec"]["template"]["spec"][
        "containers"]
    assert [(c["name"], c["image"]) for c in stored] == containers


def test_patch_merge_deletes_keys_set_to_null(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, WEB_CONFIGMAP)
    kubectl("patch", "-n", namespace, "configmap", "web-config", "--type=merge",
            "-p", '{"data": {"size": null, "shape": "round"}}')
    assert get_json(kubectl, namespace, "configmap", "web-config")["data"] == {
        "color": "blue", "shape": "round"}


def test_patch_json_applies_operations_in_order(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, WEB_DEPLOYMENT)
    operations = [
        {"op": "replace", "path": "/spec/replicas", "value": 5},
        {"op": "remove", "path": "/metadata/labels/tier"},
        {"op": "add", "path": "/metadata/labels/track", "value": "stable"},
    ]
    result = kubectl("patch", "-n", namespace, "deployment", "web", "--type=json",
                     "-p", json.dumps(operations))
    assert result.stdout.strip() == "deployment.apps/web patched"
    deployment = get_json(kubectl, namespace, "deployment", "web")
    assert deployment["spec"]["replicas"] == 5
    assert deployment["metadata"]["labels"] == {"app": "web", "track": "stable"}


def test_patch_json_with_a_failing_test_op_changes_nothing(
        kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, WEB_DEPLOYMENT)
    operations = [{"op": "replace", "path": "/spec/replicas", "value": 7},
                  {"op": "test", "path": "/spec/replicas", "value": 1}]
    result = kubectl("patch", "-n", namespace, "deployment", "web", "--type=json",
                     "-p", json.dumps(operations), check=False)
    assert result.returncode == 1
    assert get_json(kubectl, namespace, "deployment", "web")["spec"]["replicas"] == 2


def test_scale_deployment_goes_through_the_scale_subresource(
        kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, WEB_DEPLOYMENT)
    before = request_count(kubectl, "deployments", "scale")
    result = kubectl("scale", "-n", namespace, "deployment", "web", "--replicas=3")
    assert result.stdout.strip() == "deployment.apps/web scaled"
    assert request_count(kubectl, "deployments", "scale") > before
    assert get_json(kubectl, namespace, "deployment", "web")["spec"]["replicas"] == 3


def test_edit_saves_what_the_editor_wrote(
        kubectl: Kubectl, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    apply(kubectl, namespace, WEB_DEPLOYMENT)
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/image: nginx:1.25/image: nginx:1.26/' \"$1\"\n")
    editor.chmod(0o755)
    monkeypatch.setenv("KUBE_EDITOR", str(editor))

    result = kubectl("edit", "-n", namespace, "deployment", "web")
    assert result.stdout.strip() == "deployment.apps/web edited"
    containers = get_json(kubectl, namespace, "deployment", "web")["spec"]["template"]["spec"][
        "containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("nginx", "nginx:1.26"), ("sidecar", "busybox:1.36")]


def test_delete_removes_configmap_deployment_and_service(
        kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, "---\n".join([WEB_DEPLOYMENT, WEB_CONFIGMAP, WEB_SERVICE]))
    output = kubectl("delete", "-n", namespace, "configmap/web-config", "deployment/web",
                     "service/web").stdout
    assert 'configmap "web-config" deleted' in output
    assert 'deployment.apps "web" deleted' in output
    assert 'service "web" deleted' in output
    for kind, name in [("configmap", "web-config"), ("deployment", "web"), ("service", "web")]:
        assert_not_found(kubectl, namespace, kind, name)


def test_delete_of_an_unscheduled_pod_is_immediate(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, WEB_POD)
    started = time.monotonic()
    assert 'pod "web-pod" deleted' in kubectl("delete", "-n", namespace, "pod", "web-pod").stdout
    assert time.monotonic() - started < 20  # not after the 30 s grace period: at once
    assert_not_found(kubectl, namespace, "pod", "web-pod")


# -- watch -----------------------------------------------------------------------------------

async def next_line_starting(stream: asyncio.StreamReader, prefix: str, timeout: float = 10
                             ) -> list[str]:
    """Read watch output until a line starts with prefix; return that line's cells."""
    async with asyncio.timeout(timeout):
        while True:
            line = (await stream.readline()).decode()
            assert line, "kubectl get -w exited before printing the expected line"
            if line.startswith(prefix):
                return line.split()


async def test_get_pods_watch_prints_added_and_modified_events(
        apiserver: APIServerProcess, kubeconfig: Path, namespace: str) -> None:
    binary = Path(sys.executable).with_name("kubectl")
    watcher = await asyncio.create_subprocess_exec(
        str(binary), f"--kubeconfig={kubeconfig}", "get", "pods", "-w", "-n", namespace,
        "--output-watch-events", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert watcher.stdout is not None
        async with aiohttp.ClientSession() as session:
            api = API(session, apiserver.url)
            pods = f"/api/v1/namespaces/{namespace}/pods"
            status, _ = await api.post(pods, pod("watched", labels={"app": "web"}))
            assert status == 201
            added = await next_line_starting(watcher.stdout, "ADDED")
            assert added[:4] == ["ADDED", "watched", "0/1", "Pending"]

            status, _ = await api.patch(f"{pods}/watched",
                                        {"metadata": {"labels": {"tier": "frontend"}}})
            assert status == 200
            modified = await next_line_starting(watcher.stdout, "MODIFIED")
            assert modified[:2] == ["MODIFIED", "watched"]
    finally:
        watcher.terminate()
        await watcher.wait()
    assert watcher.returncode is not None


# -- imperative create commands --------------------------------------------------------------

def test_create_deployment_derives_labels_selector_and_container_name(
        kubectl: Kubectl, namespace: str) -> None:
    result = kubectl("create", "deployment", "shop", "-n", namespace, "--image=nginx:1.25",
                     "--replicas=2")
    assert result.stdout.strip() == "deployment.apps/shop created"
    spec = get_json(kubectl, namespace, "deployment", "shop")["spec"]
    assert spec["replicas"] == 2
    assert spec["selector"] == {"matchLabels": {"app": "shop"}}
    assert spec["template"]["metadata"]["labels"] == {"app": "shop"}
    assert [(c["name"], c["image"]) for c in spec["template"]["spec"]["containers"]] == [
        ("nginx", "nginx:1.25")]


def test_create_configmap_from_literals(kubectl: Kubectl, namespace: str) -> None:
    result = kubectl("create", "configmap", "settings", "-n", namespace,
                     "--from-literal=mode=fast", "--from-literal=level=3")
    assert result.stdout.strip() == "configmap/settings created"
    assert get_json(kubectl, namespace, "configmap", "settings")["data"] == {
        "mode": "fast", "level": "3"}


def test_create_secret_generic_stores_values_base64_encoded(
        kubectl: Kubectl, namespace: str) -> None:
    result = kubectl("create", "secret", "generic", "db-pass", "-n", namespace,
                     "--from-literal=password=s3cret")
    assert result.stdout.strip() == "secret/db-pass created"
    secret = get_json(kubectl, namespace, "secret", "db-pass")
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"password": base64.b64encode(b"s3cret").decode()}


def test_run_creates_a_pod_labelled_with_its_name(kubectl: Kubectl, namespace: str) -> None:
    result = kubectl("run", "shell", "-n", namespace, "--image=busybox:1.36", "--",
                     "sleep", "3600")
    assert result.stdout.strip() == "pod/shell created"
    created = get_json(kubectl, namespace, "pod", "shell")
    assert created["metadata"]["labels"] == {"run": "shell"}
    assert created["spec"]["containers"][0]["args"] == ["sleep", "3600"]
    assert created["status"]["phase"] == "Pending"


def test_get_events_in_an_empty_namespace_succeeds(kubectl: Kubectl, namespace: str) -> None:
    result = kubectl("get", "events", "-n", namespace)
    assert result.stdout == ""
    assert f"No resources found in {namespace} namespace." in result.stderr


def test_describe_pod_prints_its_fields(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, WEB_POD)
    output = kubectl("describe", "-n", namespace, "pod", "web-pod").stdout
    assert re.search(r"^Name:\s+web-pod$", output, re.MULTILINE)
    assert re.search(rf"^Namespace:\s+{namespace}$", output, re.MULTILINE)
    assert re.search(r"^Status:\s+Pending$", output, re.MULTILINE)
    assert re.search(r"^\s+Image:\s+nginx:1.25$", output, re.MULTILINE)


def test_explain_describes_pod_spec_containers(kubectl: Kubectl) -> None:
    output = kubectl("explain", "pod.spec.containers").stdout
    assert re.search(r"^KIND:\s+Pod$", output, re.MULTILINE)
    assert re.search(r"^VERSION:\s+v1$", output, re.MULTILINE)
    assert re.search(r"^FIELD:\s+containers <\[\]Container>$", output, re.MULTILINE)
    assert re.search(r"^\s+image\s+<string>$", output, re.MULTILINE)
    assert re.search(r"^\s+name\s+<string> -required-$", output, re.MULTILINE)


# -- errors ----------------------------------------------------------------------------------

def test_get_of_a_missing_pod_prints_not_found(kubectl: Kubectl, namespace: str) -> None:
    result = kubectl("get", "-n", namespace, "pod", "nope", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'


def test_create_of_an_invalid_object_prints_the_field_path(
        kubectl: Kubectl, namespace: str) -> None:
    manifest = WEB_DEPLOYMENT.replace("  replicas: 2\n", "  replicas: -1\n")
    result = create(kubectl, namespace, manifest, check=False)
    assert result.returncode == 1
    assert ('The Deployment "web" is invalid: spec.replicas: Invalid value: -1: '
            "must be greater than or equal to 0") in result.stderr
    assert_not_found(kubectl, namespace, "deployment", "web")
