"""The official `kubernetes` Python client, and the seeds' scheduler lab, against our API server."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client import ApiException

LAB_SCHEDULER = Path(__file__).resolve().parents[1] / "labs" / "scheduler" / "watch_scheduler.py"
# Client 37 (pydantic models) words issue 825's "Invalid value for `target`, must not be None"
# as a pydantic ValidationError, itself a ValueError.
BINDING_TRAP = r"validation error for V1Binding\ntarget\n"
WATCH_TIMEOUT = 20  # seconds; the server ends a watch after this, so no test can hang on one


@pytest.fixture
def api_client(kubeconfig: Path) -> Iterator[client.ApiClient]:
    """An ApiClient built from the test kubeconfig (never from the global default config)."""
    api = config.new_client_from_config(config_file=str(kubeconfig))
    yield api
    api.close()


@pytest.fixture
def v1(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture
def apps(api_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api_client)


@pytest.fixture
def make_nodes(v1: client.CoreV1Api) -> Iterator[Callable[[int, dict[str, str]], list[str]]]:
    """Create Node objects (cluster-scoped, so uniquely named) and delete them after the test."""
    created: list[str] = []

    def make(count: int, labels: dict[str, str]) -> list[str]:
        prefix = f"node-{uuid.uuid4().hex[:6]}"
        names = [f"{prefix}-{i}" for i in range(1, count + 1)]
        for name in names:
            v1.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name, labels=labels)))
            created.append(name)
        return names

    yield make
    for name in created:
        v1.delete_node(name)


def pod_model(name: str, *, labels: dict[str, str] | None = None,
              scheduler_name: str | None = None) -> client.V1Pod:
    """A one-container pod as a client model, without apiVersion/kind (the URL says Pod)."""
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="app", image="busybox:1.36")],
            scheduler_name=scheduler_name,
        ),
    )


def binding(pod: str, node: str = "node-1") -> client.V1Binding:
    return client.V1Binding(metadata=client.V1ObjectMeta(name=pod),
                            target=client.V1ObjectReference(kind="Node", name=node))


def status_of(error: ApiException) -> dict[str, Any]:
    """The Status object an API error carries in its body."""
    body = json.loads(error.body)
    assert body["kind"] == "Status" and body["status"] == "Failure"
    assert body["code"] == error.status
    return body


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# -- CoreV1Api: ConfigMaps, Secrets, Services, Pods --------------------------------------------

def test_config_map_create_read_list_replace_patch_delete(v1: client.CoreV1Api,
                                                          namespace: str) -> None:
    created = v1.create_namespaced_config_map(namespace, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="settings", labels={"app": "web"}),
        data={"color": "blue"},
    ))
    assert (created.kind, created.api_version) == ("ConfigMap", "v1")
    assert created.metadata.uid and created.metadata.resource_version
    assert created.metadata.creation_timestamp is not None
    assert created.metadata.namespace == namespace

    read = v1.read_namespaced_config_map("settings", namespace)
    assert read.data == {"color": "blue"}
    assert read.metadata.resource_version == created.metadata.resource_version

    listed = v1.list_namespaced_config_map(namespace)
    assert "settings" in [item.metadata.name for item in listed.items]
    assert listed.metadata.resource_version

    read.data["color"] = "green"
    replaced = v1.replace_namespaced_config_map("settings", namespace, read)
    assert replaced.data == {"color": "green"}
    assert replaced.metadata.resource_version != created.metadata.resource_version

    strategic = v1.patch_namespaced_config_map("settings", namespace, {"data": {"size": "L"}})
    assert strategic.data == {"color": "green", "size": "L"}
    json_patched = v1.patch_namespaced_config_map(
        "settings", namespace, [{"op": "remove", "path": "/data/color"}])
    assert json_patched.data == {"size": "L"}
    merged = v1.patch_namespaced_config_map(
        "settings", namespace, {"metadata": {"labels": {"app": None, "tier": "db"}}},
        _content_type="application/merge-patch+json")
    assert merged.metadata.labels == {"tier": "db"}

    deleted = v1.delete_namespaced_config_map("settings", namespace)
    assert deleted["kind"] == "Status" and deleted["status"] == "Success"
    assert deleted["details"]["name"] == "settings"
    with pytest.raises(ApiException) as caught:
        v1.read_namespaced_config_map("settings", namespace)
    assert caught.value.status == 404


def test_secret_string_data_is_merged_into_base64_data(v1: client.CoreV1Api,
                                                       namespace: str) -> None:
    v1.create_namespaced_secret(namespace, client.V1Secret(
        metadata=client.V1ObjectMeta(name="db"),
        data={"password": b64("s3cret")},
        string_data={"user": "admin"},
    ))
    read = v1.read_namespaced_secret("db", namespace)
    assert read.type == "Opaque"
    assert read.data == {"password": b64("s3cret"), "user": b64("admin")}
    assert read.string_data is None

    read.data["password"] = b64("changed")
    replaced = v1.replace_namespaced_secret("db", namespace, read)
    assert replaced.data["password"] == b64("changed")
    patched = v1.patch_namespaced_secret("db", namespace, {"stringData": {"host": "db.local"}})
    assert base64.b64decode(patched.data["host"]) == b"db.local"
    assert [s.metadata.name for s in v1.list_namespaced_secret(namespace).items] == ["db"]

    v1.delete_namespaced_secret("db", namespace)
    assert v1.list_namespaced_secret(namespace).items == []


def service_model(name: str) -> client.V1Service:
    return client.V1Service(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1ServiceSpec(selector={"app": name},
                                  ports=[client.V1ServicePort(port=80, target_port=8080)]),
    )


def test_service_create_defaults_replace_patch_delete(v1: client.CoreV1Api,
                                                      namespace: str) -> None:
    spec = v1.create_namespaced_service(namespace, service_model("web")).spec
    assert spec.type == "ClusterIP"
    assert spec.session_affinity == "None"
    assert spec.ports[0].protocol == "TCP" and spec.ports[0].target_port == 8080
    assert spec.ip_families == ["IPv4"] and spec.ip_family_policy == "SingleStack"
    assert spec.internal_traffic_policy == "Cluster"

    read = v1.read_namespaced_service("web", namespace)
    read.spec.ports[0].port = 8000
    replaced = v1.replace_namespaced_service("web", namespace, read)
    assert replaced.spec.ports[0].port == 8000

    patched = v1.patch_namespaced_service("web", namespace, {"metadata": {"labels": {"a": "b"}}})
    assert patched.metadata.labels == {"a": "b"}
    assert "web" in [s.metadata.name for s in v1.list_namespaced_service(namespace).items]
    deleted = v1.delete_namespaced_service("web", namespace)
    assert deleted.metadata.name == "web"
    with pytest.raises(ApiException) as caught:
        v1.read_namespaced_service("web", namespace)
    assert caught.value.status == 404


def test_service_is_allocated_a_cluster_ip_that_never_changes(v1: client.CoreV1Api,
                                                              namespace: str) -> None:
    created = v1.create_namespaced_service(namespace, service_model("web"))
    cluster_ip = created.spec.cluster_ip
    assert cluster_ip and created.spec.cluster_ips == [cluster_ip]

    read = v1.read_namespaced_service("web", namespace)
    read.spec.ports[0].port = 8000
    assert v1.replace_namespaced_service("web", namespace, read).spec.cluster_ip == cluster_ip

    read = v1.read_namespaced_service("web", namespace)
    other_ip = "10.0.0.99" if cluster_ip != "10.0.0.99" else "10.0.0.98"
    read.spec.cluster_ip, read.spec.cluster_ips = other_ip, [other_ip]
    with pytest.raises(ApiException) as caught:
        v1.replace_namespaced_service("web", namespace, read)
    assert caught.value.status == 422
    assert status_of(caught.value)["reason"] == "Invalid"


def test_pod_without_api_version_and_kind_gets_them_from_the_url(v1: client.CoreV1Api,
                                                                  namespace: str) -> None:
    model = pod_model("bare")
    assert model.api_version is None and model.kind is None
    created = v1.create_namespaced_pod(namespace, model)
    assert (created.api_version, created.kind) == ("v1", "Pod")
    raw = v1.read_namespaced_pod("bare", namespace, _preload_content=False)
    stored = json.loads(raw.data)
    assert (stored["apiVersion"], stored["kind"]) == ("v1", "Pod")


def test_pod_create_read_replace_patch_delete(v1: client.CoreV1Api, namespace: str) -> None:
    full = pod_model("web", labels={"app": "web"})
    full.api_version, full.kind = "v1", "Pod"
    created = v1.create_namespaced_pod(namespace, full)
    spec = created.spec
    assert spec.restart_policy == "Always" and spec.dns_policy == "ClusterFirst"
    assert spec.scheduler_name == "default-scheduler"
    assert spec.termination_grace_period_seconds == 30
    assert spec.containers[0].image_pull_policy == "IfNotPresent"
    assert spec.containers[0].termination_message_path == "/dev/termination-log"
    assert created.status.phase == "Pending" and created.status.qos_class == "BestEffort"

    read = v1.read_namespaced_pod("web", namespace)
    read.metadata.labels["tier"] = "front"
    read.spec.containers[0].image = "busybox:1.37"
    replaced = v1.replace_namespaced_pod("web", namespace, read)
    assert replaced.metadata.labels == {"app": "web", "tier": "front"}
    assert replaced.spec.containers[0].image == "busybox:1.37"

    patched = v1.patch_namespaced_pod(
        "web", namespace, {"spec": {"containers": [{"name": "app", "image": "busybox:1.38"}]}})
    assert [(c.name, c.image) for c in patched.spec.containers] == [("app", "busybox:1.38")]

    deleted = v1.delete_namespaced_pod("web", namespace)
    assert deleted.metadata.name == "web"
    with pytest.raises(ApiException) as caught:
        v1.read_namespaced_pod("web", namespace)
    assert caught.value.status == 404


def add_container(pod: client.V1Pod) -> None:
    pod.spec.containers.append(client.V1Container(name="extra", image="busybox:1.36"))


def change_restart_policy(pod: client.V1Pod) -> None:
    pod.spec.restart_policy = "Never"


@pytest.mark.parametrize(("change", "message"), [
    (add_container, "spec.containers: Forbidden: pod updates may not add or remove containers"),
    (change_restart_policy, "spec: Forbidden: pod updates may not change fields other than"),
])
def test_pod_replace_of_immutable_spec_fields_is_invalid(
        v1: client.CoreV1Api, namespace: str, change: Callable[[client.V1Pod], None],
        message: str) -> None:
    v1.create_namespaced_pod(namespace, pod_model("web"))
    read = v1.read_namespaced_pod("web", namespace)
    change(read)
    with pytest.raises(ApiException) as caught:
        v1.replace_namespaced_pod("web", namespace, read)
    assert caught.value.status == 422
    body = status_of(caught.value)
    assert body["reason"] == "Invalid"
    assert body["message"].startswith('Pod "web" is invalid: ')
    assert message in body["message"]


@pytest.mark.parametrize(("label_selector", "field_selector", "expected"), [
    ("tier=web", "", {"web-1", "web-2"}),
    ("tier=web,env!=prod", "", {"web-1"}),
    ("tier in (web, db)", "metadata.name!=web-2", {"web-1", "db-1"}),
    ("!tier", "", {"plain"}),
    ("", "metadata.name=db-1", {"db-1"}),
    ("", "spec.nodeName=", {"web-1", "web-2", "db-1", "plain"}),
    ("", "status.phase=Pending,spec.schedulerName=default-scheduler",
     {"web-1", "web-2", "db-1", "plain"}),
    ("", "status.phase=Running", set()),
])
def test_list_pods_filters_by_label_and_field_selectors(
        v1: client.CoreV1Api, namespace: str, label_selector: str, field_selector: str,
        expected: set[str]) -> None:
    for name, labels in [("web-1", {"tier": "web"}), ("web-2", {"tier": "web", "env": "prod"}),
                         ("db-1", {"tier": "db"}), ("plain", None)]:
        v1.create_namespaced_pod(namespace, pod_model(name, labels=labels))
    listed = v1.list_namespaced_pod(namespace, label_selector=label_selector,
                                    field_selector=field_selector)
    assert {p.metadata.name for p in listed.items} == expected


def test_list_pods_with_unknown_field_label_is_bad_request(v1: client.CoreV1Api,
                                                          namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        v1.list_namespaced_pod(namespace, field_selector="spec.bogus=x")
    assert caught.value.status == 400
    assert status_of(caught.value)["reason"] == "BadRequest"


def test_pod_status_subresource_changes_only_status(v1: client.CoreV1Api, namespace: str) -> None:
    v1.create_namespaced_pod(namespace, pod_model("web"))
    condition = {"type": "Ready", "status": "False", "reason": "Testing"}
    patched = v1.patch_namespaced_pod_status("web", namespace, {
        "status": {"conditions": [condition], "message": "checked"},
        "spec": {"activeDeadlineSeconds": 60},
    })
    assert patched.status.message == "checked"
    assert [(c.type, c.status, c.reason) for c in patched.status.conditions] == [
        ("Ready", "False", "Testing")]
    assert patched.spec.active_deadline_seconds is None

    read = v1.read_namespaced_pod_status("web", namespace)
    assert read.status.message == "checked"
    assert read.metadata.resource_version == patched.metadata.resource_version

    main = v1.patch_namespaced_pod("web", namespace, {"status": {"message": "ignored"}})
    assert main.status.message == "checked"


def test_api_errors_carry_a_status_body(v1: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        v1.read_namespaced_pod("missing", namespace)
    assert caught.value.status == 404
    body = status_of(caught.value)
    assert body["reason"] == "NotFound"
    assert body["message"] == 'pods "missing" not found'
    assert body["details"] == {"name": "missing", "kind": "pods"}

    v1.create_namespaced_config_map(namespace, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="twice")))
    with pytest.raises(ApiException) as caught:
        v1.create_namespaced_config_map(namespace, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="twice")))
    assert caught.value.status == 409
    body = status_of(caught.value)
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == 'configmaps "twice" already exists'


# -- AppsV1Api: Deployments and their scale subresource ---------------------------------------

def deployment_model(name: str, replicas: int) -> client.V1Deployment:
    labels = {"app": name}
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="app",
                                                                     image="nginx:1.27")]),
            ),
        ),
    )


def test_deployment_defaults_scale_conflict_and_delete(apps: client.AppsV1Api,
                                                       namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, deployment_model("web", 2))
    read = apps.read_namespaced_deployment("web", namespace)
    assert (read.api_version, read.kind) == ("apps/v1", "Deployment")
    assert read.metadata.generation == 1
    strategy = read.spec.strategy
    assert strategy.type == "RollingUpdate"
    assert strategy.rolling_update.max_surge == "25%"
    assert strategy.rolling_update.max_unavailable == "25%"
    assert read.spec.revision_history_limit == 10
    assert read.spec.progress_deadline_seconds == 600
    assert read.spec.template.spec.restart_policy == "Always"

    scale = apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 5}})
    assert (scale.kind, scale.api_version) == ("Scale", "autoscaling/v1")
    assert scale.spec.replicas == 5
    read_scale = apps.read_namespaced_deployment_scale("web", namespace)
    assert read_scale.spec.replicas == 5
    assert read_scale.status.selector == "app=web"
    scaled = apps.read_namespaced_deployment("web", namespace)
    assert scaled.spec.replicas == 5 and scaled.metadata.generation == 2

    read.spec.replicas = 1  # `read` still carries the resourceVersion from before the scale
    with pytest.raises(ApiException) as caught:
        apps.replace_namespaced_deployment("web", namespace, read)
    assert caught.value.status == 409
    body = status_of(caught.value)
    assert body["reason"] == "Conflict"
    assert "the object has been modified" in body["message"]

    deleted = apps.delete_namespaced_deployment("web", namespace)
    assert deleted["status"] == "Success" and deleted["details"]["name"] == "web"
    with pytest.raises(ApiException) as caught:
        apps.read_namespaced_deployment("web", namespace)
    assert caught.value.status == 404


# -- watch ------------------------------------------------------------------------------------

def change_pod_in_thread(v1: client.CoreV1Api, namespace: str, name: str
                         ) -> tuple[threading.Thread, list[BaseException]]:
    """From another thread: create a pod, relabel it, delete it (ADDED, MODIFIED, DELETED)."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            v1.create_namespaced_pod(namespace, pod_model(name))
            v1.patch_namespaced_pod(name, namespace, {"metadata": {"labels": {"seen": "yes"}}})
            v1.delete_namespaced_pod(name, namespace)
        except BaseException as err:  # reported by the test thread
            failures.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, failures


def test_watch_all_namespaces_replays_existing_pods_then_streams_changes(
        v1: client.CoreV1Api, namespace: str) -> None:
    for name in ("old-1", "old-2"):
        v1.create_namespaced_pod(namespace, pod_model(name))
    seen: list[tuple[str, str]] = []
    changes: tuple[threading.Thread, list[BaseException]] | None = None
    w = watch.Watch()
    for event in w.stream(v1.list_pod_for_all_namespaces, timeout_seconds=WATCH_TIMEOUT):
        pod = event["object"]
        if pod.metadata.namespace != namespace:
            continue
        assert isinstance(pod, client.V1Pod)
        seen.append((event["type"], pod.metadata.name))
        if changes is None and {("ADDED", "old-1"), ("ADDED", "old-2")} <= set(seen):
            changes = change_pod_in_thread(v1, namespace, "new")
        if (event["type"], pod.metadata.name) == ("DELETED", "new"):
            w.stop()
    assert changes is not None
    changes[0].join(timeout=10)
    assert changes[1] == []
    assert sorted(seen[:2]) == [("ADDED", "old-1"), ("ADDED", "old-2")]
    assert seen[2:] == [("ADDED", "new"), ("MODIFIED", "new"), ("DELETED", "new")]


def test_watch_from_a_resource_version_sends_only_later_changes_in_order(
        v1: client.CoreV1Api, namespace: str) -> None:
    v1.create_namespaced_pod(namespace, pod_model("old"))
    rv = v1.list_namespaced_pod(namespace).metadata.resource_version
    thread, failures = change_pod_in_thread(v1, namespace, "new")
    events: list[dict[str, Any]] = []
    w = watch.Watch()
    for event in w.stream(v1.list_namespaced_pod, namespace=namespace, resource_version=rv,
                          timeout_seconds=WATCH_TIMEOUT):
        events.append(event)
        if event["type"] == "DELETED":
            w.stop()
    thread.join(timeout=10)
    assert failures == []
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("ADDED", "new"), ("MODIFIED", "new"), ("DELETED", "new")]
    assert events[1]["object"].metadata.labels == {"seen": "yes"}
    versions = [int(e["object"].metadata.resource_version) for e in events]
    assert int(rv) < versions[0] < versions[1] < versions[2]
    assert w.resource_version == events[-1]["object"].metadata.resource_version


# -- binding: the scheduler's last step, and the client's ValueError trap ----------------------

def assert_bound(v1: client.CoreV1Api, namespace: str, name: str, node: str) -> None:
    pod = v1.read_namespaced_pod(name, namespace)
    assert pod.spec.node_name == node
    scheduled = [c for c in pod.status.conditions or [] if c.type == "PodScheduled"]
    assert [c.status for c in scheduled] == ["True"]


def test_binding_succeeds_but_client_raises_value_error_reading_the_status(
        v1: client.CoreV1Api, namespace: str) -> None:
    v1.create_namespaced_pod(namespace, pod_model("web"))
    with pytest.raises(ValueError, match=BINDING_TRAP):
        v1.create_namespaced_binding(namespace, binding("web"))
    assert_bound(v1, namespace, "web", "node-1")


def test_binding_without_preloading_content_returns_the_raw_201_status(
        v1: client.CoreV1Api, namespace: str) -> None:
    v1.create_namespaced_pod(namespace, pod_model("web"))
    response = v1.create_namespaced_binding(namespace, binding("web"), _preload_content=False)
    assert response.status == 201
    answer = json.loads(response.data)
    assert (answer["kind"], answer["status"], answer["code"]) == ("Status", "Success", 201)
    assert_bound(v1, namespace, "web", "node-1")


def test_binding_with_the_value_error_caught_binds_the_pod(v1: client.CoreV1Api,
                                                           namespace: str) -> None:
    v1.create_namespaced_pod(namespace, pod_model("web"))
    try:
        v1.create_namespaced_binding(namespace, binding("web", "node-2"))
    except ValueError:
        pass  # the lab's fix: the binding is done; only reading the answer failed
    assert_bound(v1, namespace, "web", "node-2")


def test_binding_an_already_bound_pod_is_a_conflict(v1: client.CoreV1Api, namespace: str) -> None:
    v1.create_namespaced_pod(namespace, pod_model("web"))
    v1.create_namespaced_binding(namespace, binding("web"), _preload_content=False)
    with pytest.raises(ApiException) as caught:
        v1.create_namespaced_binding(namespace, binding("web", "node-2"))
    assert caught.value.status == 409
    body = status_of(caught.value)
    assert body["reason"] == "Conflict"
    assert 'already assigned to node "node-1"' in body["message"]
    assert_bound(v1, namespace, "web", "node-1")


def test_pod_binding_subresource_behaves_like_bindings(v1: client.CoreV1Api,
                                                       namespace: str) -> None:
    for name in ("a", "b"):
        v1.create_namespaced_pod(namespace, pod_model(name))
    with pytest.raises(ValueError, match=BINDING_TRAP):
        v1.create_namespaced_pod_binding("a", namespace, binding("a"))
    assert_bound(v1, namespace, "a", "node-1")
    response = v1.create_namespaced_pod_binding("b", namespace, binding("b", "node-2"),
                                                _preload_content=False)
    assert response.status == 201
    assert_bound(v1, namespace, "b", "node-2")
    with pytest.raises(ApiException) as caught:
        v1.create_namespaced_pod_binding("b", namespace, binding("b"))
    assert caught.value.status == 409


# -- the seeds' lab scheduler -----------------------------------------------------------------

@pytest.mark.slow
def test_lab_watch_scheduler_binds_its_pods_spread_over_nodes(
        v1: client.CoreV1Api, namespace: str, kubeconfig: Path,
        make_nodes: Callable[[int, dict[str, str]], list[str]]) -> None:
    lab = uuid.uuid4().hex[:8]
    nodes = make_nodes(3, {"lab": lab})
    mine = [f"mine-{i}" for i in range(1, 6)]
    for name in mine[:2]:
        v1.create_namespaced_pod(namespace, pod_model(name, scheduler_name="my-scheduler"))
    v1.create_namespaced_pod(namespace, pod_model("other"))

    scheduler = subprocess.Popen(
        [sys.executable, str(LAB_SCHEDULER), "--node-selector", f"lab={lab}",
         "--max-pods", "5", "--timeout", "60"],
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        for name in mine[2:]:
            v1.create_namespaced_pod(namespace, pod_model(name, scheduler_name="my-scheduler"))
        output, _ = scheduler.communicate(timeout=90)
    finally:
        if scheduler.poll() is None:
            scheduler.kill()
            scheduler.wait()
    assert scheduler.returncode == 0, output
    assert output.count("Bound ") == 5, output

    pods = {p.metadata.name: p for p in v1.list_namespaced_pod(namespace).items}
    placed = [pods[name].spec.node_name for name in mine]
    assert set(placed) <= set(nodes), placed
    assert sorted(Counter(placed).values()) == [1, 2, 2]
    for name in mine:
        assert f"Bound {namespace}/{name} -> {pods[name].spec.node_name}" in output
    assert pods["other"].spec.node_name is None
    assert pods["other"].spec.scheduler_name == "default-scheduler"


# -- pagination -------------------------------------------------------------------------------

def test_list_pages_with_limit_and_continue_return_each_item_once(v1: client.CoreV1Api,
                                                                  namespace: str) -> None:
    names = {f"cm-{i:02d}" for i in range(30)}
    for name in names:
        v1.create_namespaced_config_map(namespace, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=name)))
    seen: list[str] = []
    pages: list[client.V1ConfigMapList] = []
    token: str | None = None
    while True:
        page = v1.list_namespaced_config_map(namespace, limit=7, _continue=token)
        pages.append(page)
        seen.extend(item.metadata.name for item in page.items)
        token = page.metadata._continue
        if not token:
            break
    assert [len(p.items) for p in pages] == [7, 7, 7, 7, 2]
    assert sorted(seen) == sorted(names) and len(seen) == len(names)
    assert pages[0].metadata.remaining_item_count == 23
    assert len({p.metadata.resource_version for p in pages}) == 1


# -- events.k8s.io/v1 -----------------------------------------------------------------------

def test_events_k8s_io_events_are_created_read_in_both_shapes_and_validated(
        api_client: client.ApiClient, v1: client.CoreV1Api, namespace: str) -> None:
    """An events.k8s.io/v1 Event is stored once and read through both APIs; its strict
    rules (deprecated fields unset) and immutable note hold."""
    events = client.EventsV1Api(api_client)
    body = client.EventsV1Event(
        metadata=client.V1ObjectMeta(name="web.started"),
        event_time=datetime.now(UTC), type="Normal", reason="Started", action="Start",
        note="container started", reporting_controller="example.com/lab",
        reporting_instance="lab-1",
        regarding=client.V1ObjectReference(kind="Pod", name="web", namespace=namespace))
    created = events.create_namespaced_event(namespace, body)
    assert created.note == "container started"
    assert created.regarding.name == "web"
    core = v1.read_namespaced_event("web.started", namespace)
    assert core.message == "container started"
    assert core.involved_object.name == "web"
    assert core.reporting_component == "example.com/lab"
    listed = events.list_namespaced_event(namespace, field_selector="regarding.name=web")
    assert [e.metadata.name for e in listed.items] == ["web.started"]

    created.note = "changed"
    with pytest.raises(ApiException) as refused:
        events.replace_namespaced_event("web.started", namespace, created)
    assert refused.value.status == 422
    assert "message: Invalid value" in json.loads(refused.value.body)["message"]

    body.metadata = client.V1ObjectMeta(name="web.counted")
    body.deprecated_count = 3
    with pytest.raises(ApiException) as invalid:
        events.create_namespaced_event(namespace, body)
    assert invalid.value.status == 422
    assert "count: Invalid value" in json.loads(invalid.value.body)["message"]


def test_nodes_and_services_read_back_into_the_clients_models(
        v1: client.CoreV1Api, namespace: str) -> None:
    """Client 37's models require the fields upstream always writes: a hand-made Node has
    `status.nodeInfo.kubeProxyVersion: ""`, a new Service `status.loadBalancer: {}`."""
    name = f"fidelity-{uuid.uuid4().hex[:8]}"
    v1.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    try:
        node = v1.read_node(name)
        assert node.status.node_info.kube_proxy_version == ""
        assert name in [n.metadata.name for n in v1.list_node().items]
    finally:
        v1.delete_node(name)
    created = v1.create_namespaced_service(namespace, service_model("fidelity"))
    assert created.status.load_balancer is not None
    assert v1.read_namespaced_service("fidelity", namespace).status.load_balancer.ingress is None


def test_a_kind_not_built_yet_is_a_not_found_that_says_so(api_client: client.ApiClient,
                                                            namespace: str) -> None:
    """VolumeAttributesClasses are upstream's and not built here: the client gets
    upstream's 404 NotFound, and its message tells the student why instead of leaving them
    to guess."""
    storage = client.StorageV1Api(api_client)
    attributes = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
                  "metadata": {"name": "gold"}, "driverName": "fast.example.com"}
    with pytest.raises(ApiException) as refused:
        storage.create_volume_attributes_class(attributes)
    status = json.loads(refused.value.body)
    assert (refused.value.status, status["reason"]) == (404, "NotFound")
    assert status["message"].startswith("the server could not find the requested resource (")
    assert "volume attributes classes are not built in minikube-py" in status["message"]
    with pytest.raises(ApiException) as unknown:  # a group nobody serves: upstream's words
        client.CustomObjectsApi(api_client).list_namespaced_custom_object(
            "example.com", "v1", namespace, "widgets")
    assert json.loads(unknown.value.body)["message"] == (
        "the server could not find the requested resource")
