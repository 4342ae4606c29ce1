"""kubectl 1.37's typed `create` commands, which send their objects as protobuf.

client-go's clientsets encode request bodies as application/vnd.kubernetes.protobuf; the
server decodes them (minikube_py/api/protobuf.py) and answers in JSON, which kubectl
accepts. Each test creates an object the way a user would and reads it back as JSON.
"""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

def get_json(kubectl: Kubectl, *args: str) -> dict[str, Any]:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def created(kubectl: Kubectl, *args: str) -> str:
    """Run `kubectl create ...` and return its one-line answer ("configmap/x created")."""
    return kubectl("create", *args).stdout.strip()


@pytest.fixture
def unique() -> str:
    """A name for a cluster-scoped object, unique to this test."""
    return f"create-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def cleanup(kubectl: Kubectl) -> Iterator[list[tuple[str, str]]]:
    """Cluster-scoped objects (kind, name) to delete when the test ends."""
    objects: list[tuple[str, str]] = []
    yield objects
    for kind, name in objects:
        kubectl("delete", kind, name, "--wait=false", check=False)


# -- core/v1 --------------------------------------------------------------------------------

def test_create_namespace_stores_an_active_namespace(
        kubectl: Kubectl, unique: str, cleanup: list[tuple[str, str]]) -> None:
    cleanup.append(("namespace", unique))
    assert created(kubectl, "namespace", unique) == f"namespace/{unique} created"
    stored = get_json(kubectl, "namespace", unique)
    assert stored["metadata"]["name"] == unique
    assert stored["status"]["phase"] == "Active"


def test_create_configmap_from_literals(kubectl: Kubectl, namespace: str) -> None:
    assert created(kubectl, "configmap", "settings", "-n", namespace,
                   "--from-literal=mode=fast", "--from-literal=level=3") == (
        "configmap/settings created")
    assert get_json(kubectl, "configmap", "settings", "-n", namespace)["data"] == {
        "mode": "fast", "level": "3"}


def test_create_secret_generic_data_base64_decodes_to_the_literal(
        kubectl: Kubectl, namespace: str) -> None:
    assert created(kubectl, "secret", "generic", "db-pass", "-n", namespace,
                   "--from-literal=password=s3cret", "--from-literal=user=admin") == (
        "secret/db-pass created")
    secret = get_json(kubectl, "secret", "db-pass", "-n", namespace)
    assert secret["type"] == "Opaque"
    decoded = {key: base64.b64decode(value) for key, value in secret["data"].items()}
    assert decoded == {"password": b"s3cret", "user": b"admin"}


def test_create_service_clusterip_stores_ports_selector_and_type(
        kubectl: Kubectl, namespace: str) -> None:
    assert created(kubectl, "service", "clusterip", "web", "-n", namespace,
                   "--tcp=80:8080", "--tcp=443:https") == "service/web created"
    spec = get_json(kubectl, "service", "web", "-n", namespace)["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["selector"] == {"app": "web"}
    assert spec["ports"] == [
        {"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080},
        {"name": "443-https", "port": 443, "protocol": "TCP", "targetPort": "https"},
    ]


def test_create_service_clusterip_allocates_a_cluster_ip(
        kubectl: Kubectl, namespace: str) -> None:
    created(kubectl, "service", "clusterip", "web", "-n", namespace, "--tcp=80:8080")
    spec = get_json(kubectl, "service", "web", "-n", namespace)["spec"]
    assert spec.get("clusterIP", "") not in ("", "None")
    assert spec["clusterIPs"] == [spec["clusterIP"]]


def test_create_headless_service_keeps_cluster_ip_none(kubectl: Kubectl, namespace: str) -> None:
    created(kubectl, "service", "clusterip", "peers", "-n", namespace, "--clusterip=None")
    assert get_json(kubectl, "service", "peers", "-n", namespace)["spec"]["clusterIP"] == "None"


def test_create_serviceaccount(kubectl: Kubectl, namespace: str) -> None:
    assert created(kubectl, "serviceaccount", "robot", "-n", namespace) == (
        "serviceaccount/robot created")
    stored = get_json(kubectl, "serviceaccount", "robot", "-n", namespace)
    assert (stored["kind"], stored["metadata"]["name"]) == ("ServiceAccount", "robot")


def test_create_quota_stores_hard_limits(kubectl: Kubectl, namespace: str) -> None:
    assert created(kubectl, "quota", "small", "-n", namespace,
                   "--hard=pods=10,cpu=500m,memory=1Gi") == "resourcequota/small created"
    spec = get_json(kubectl, "resourcequota", "small", "-n", namespace)["spec"]
    assert spec["hard"] == {"pods": "10", "cpu": "500m", "memory": "1Gi"}


# -- apps/v1 and batch/v1 -------------------------------------------------------------------

def test_create_deployment_derives_labels_selector_and_container(
        kubectl: Kubectl, namespace: str) -> None:
    assert created(kubectl, "deployment", "web", "-n", namespace, "--image=nginx",
                   "--replicas=2", "--port=8080") == "deployment.apps/web created"
    deployment = get_json(kubectl, "deployment", "web", "-n", namespace)
    assert deployment["metadata"]["labels"] == {"app": "web"}
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["selector"] == {"matchLabels": {"app": "web"}}
    assert spec["template"]["metadata"]["labels"] == {"app": "web"}
    [container] = spec["template"]["spec"]["containers"]
    assert (container["name"], container["image"]) == ("nginx", "nginx")
    assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]


def test_create_deployment_with_zero_replicas_keeps_zero(
        kubectl: Kubectl, namespace: str) -> None:
    created(kubectl, "deployment", "idle", "-n", namespace, "--image=nginx", "--replicas=0")
    assert get_json(kubectl, "deployment", "idle", "-n", namespace)["spec"]["replicas"] == 0


def test_create_job_runs_the_image_with_restart_policy_never(
        kubectl: Kubectl, namespace: str) -> None:
    assert created(kubectl, "job", "once", "-n", namespace, "--image=busybox:1.36",
                   "--", "echo", "hi") == "job.batch/once created"
    pod_spec = get_json(kubectl, "job", "once", "-n", namespace)["spec"]["template"]["spec"]
    assert pod_spec["restartPolicy"] == "Never"
    [container] = pod_spec["containers"]
    assert (container["name"], container["image"]) == ("once", "busybox:1.36")
    assert container["command"] == ["echo", "hi"]


def test_create_cronjob_stores_schedule_and_job_template(
        kubectl: Kubectl, namespace: str) -> None:
    assert created(kubectl, "cronjob", "tick", "-n", namespace, "--image=busybox:1.36",
                   "--schedule=*/5 * * * *") == "cronjob.batch/tick created"
    spec = get_json(kubectl, "cronjob", "tick", "-n", namespace)["spec"]
    assert spec["schedule"] == "*/5 * * * *"
    pod_spec = spec["jobTemplate"]["spec"]["template"]["spec"]
    assert pod_spec["restartPolicy"] == "OnFailure"
    assert [c["image"] for c in pod_spec["containers"]] == ["busybox:1.36"]


# -- rbac, scheduling, policy ---------------------------------------------------------------

def test_create_role_stores_its_rule(kubectl: Kubectl, namespace: str) -> None:
    assert created(kubectl, "role", "pod-reader", "-n", namespace, "--verb=get",
                   "--verb=list", "--resource=pods") == (
        "role.rbac.authorization.k8s.io/pod-reader created")
    assert get_json(kubectl, "role", "pod-reader", "-n", namespace)["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]


def test_create_rolebinding_stores_role_ref_and_subjects(
        kubectl: Kubectl, namespace: str) -> None:
    assert created(kubectl, "rolebinding", "read-pods", "-n", namespace,
                   "--role=pod-reader", "--user=jane",
                   f"--serviceaccount={namespace}:robot") == (
        "rolebinding.rbac.authorization.k8s.io/read-pods created")
    binding = get_json(kubectl, "rolebinding", "read-pods", "-n", namespace)
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"}
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"},
        {"kind": "ServiceAccount", "name": "robot", "namespace": namespace},
    ]


def test_create_clusterrole_and_clusterrolebinding(
        kubectl: Kubectl, unique: str, cleanup: list[tuple[str, str]]) -> None:
    cleanup += [("clusterrolebinding", unique), ("clusterrole", unique)]
    created(kubectl, "clusterrole", unique, "--verb=get", "--resource=nodes")
    created(kubectl, "clusterrolebinding", unique, f"--clusterrole={unique}", "--group=ops")
    assert get_json(kubectl, "clusterrole", unique)["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    binding = get_json(kubectl, "clusterrolebinding", unique)
    assert binding["roleRef"]["name"] == unique
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "ops"}]


def test_create_priorityclass_stores_value_and_description(
        kubectl: Kubectl, unique: str, cleanup: list[tuple[str, str]]) -> None:
    cleanup.append(("priorityclass", unique))
    assert created(kubectl, "priorityclass", unique, "--value=1000",
                   "--description=batch work") == (
        f"priorityclass.scheduling.k8s.io/{unique} created")
    stored = get_json(kubectl, "priorityclass", unique)
    assert (stored["value"], stored["description"]) == (1000, "batch work")
    assert stored.get("globalDefault", False) is False


def test_create_pdb_stores_min_available_and_selector(kubectl: Kubectl, namespace: str) -> None:
    assert created(kubectl, "pdb", "web", "-n", namespace, "--selector=app=web",
                   "--min-available=50%") == "poddisruptionbudget.policy/web created"
    spec = get_json(kubectl, "pdb", "web", "-n", namespace)["spec"]
    assert spec["minAvailable"] == "50%"
    assert spec["selector"] == {"matchLabels": {"app": "web"}}


def test_create_with_output_json_reads_the_json_answer(kubectl: Kubectl, namespace: str) -> None:
    answer = json.loads(kubectl("create", "configmap", "echo", "-n", namespace,
                                "--from-literal=a=1", "-o", "json").stdout)
    assert answer["metadata"]["resourceVersion"]
    assert answer["data"] == {"a": "1"}
