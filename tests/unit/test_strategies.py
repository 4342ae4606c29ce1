"""Per-resource strategies default, prepare and validate objects as upstream's registry does."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.cron import CronSyntaxError, parse_standard
from minikube_py.api.resources import RESOURCES, Resource, by_kind
from minikube_py.api.validation import FieldError
from minikube_py.apiserver.registry.strategies import strategy_for
from minikube_py.apiserver.registry.strategies.base import KindStrategy, Strategy
from minikube_py.apiserver.registry.subresources import assign_pod, assigned_copy

UID = "6b2e9f0c-1d2a-4c3b-9e8f-0a1b2c3d4e5f"
RBAC = "rbac.authorization.k8s.io/v1"

# --- the store's create and update paths -------------------------------------------------


def strategy(api_version: str, kind: str) -> Strategy:
    resource = by_kind(api_version, kind)
    assert resource is not None
    return strategy_for(resource)


def create(obj: Obj) -> tuple[Obj, list[FieldError]]:
    """What the generic store does on create: set the uid, prepare, default, validate."""
    s = strategy(obj["apiVersion"], obj["kind"])
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("uid", UID)
    s.prepare_for_create(obj)
    s.default(obj)
    return obj, s.validate(obj)


def created(obj: Obj) -> Obj:
    obj, errors = create(obj)
    assert errors == [], [str(e) for e in errors]
    return obj


def update(old: Obj, change: Callable[[Obj], Any]) -> tuple[Obj, list[FieldError]]:
    """What the generic store does on update: prepare, default, validate against the old."""
    s = strategy(old["apiVersion"], old["kind"])
    new = copy.deepcopy(old)
    change(new)
    s.prepare_for_update(new, old)
    s.default(new)
    return new, s.validate_update(new, old)


def get(obj: Any, path: str) -> Any:
    """`spec.containers.0.name` -> the value there."""
    for part in path.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


def set_at(obj: Obj, path: str, value: Any) -> Obj:
    """A copy of `obj` with the value at `path` replaced."""
    obj = copy.deepcopy(obj)
    *parents, last = path.split(".")
    target = get(obj, ".".join(parents)) if parents else obj
    target[last] = value
    return obj


def fields_and_types(errors: list[FieldError]) -> list[tuple[str, str]]:
    return [(e.field, e.type) for e in errors]


def only_error(errors: list[FieldError]) -> tuple[str, str]:
    assert len(errors) == 1, [str(e) for e in errors]
    return errors[0].field, errors[0].type


# --- objects -----------------------------------------------------------------------------


def obj(
    api_version: str, kind: str, name: str = "x", namespace: str = "default", **rest: Any
) -> Obj:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **rest}


def pod(**spec: Any) -> Obj:
    return obj("v1", "Pod", "web", spec={"containers": [{"name": "web", "image": "nginx"}], **spec})


def with_container(**fields: Any) -> Obj:
    return pod(containers=[{"name": "web", "image": "nginx", **fields}])


def template(labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {
        "metadata": {"labels": {"app": "web"} if labels is None else labels},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}], **spec},
    }


def workload(kind: str = "Deployment", **spec: Any) -> Obj:
    selector = {"matchLabels": {"app": "web"}}
    return obj("apps/v1", kind, "web", spec={"selector": selector, "template": template(), **spec})


def deployment(**spec: Any) -> Obj:
    return workload("Deployment", **spec)


def job(**spec: Any) -> Obj:
    return obj(
        "batch/v1", "Job", "pi", spec={"template": template({}, restartPolicy="Never"), **spec}
    )


def cronjob(schedule: str) -> Obj:
    job_template = {"spec": {"template": template({}, restartPolicy="Never")}}
    return obj(
        "batch/v1", "CronJob", "report", spec={"schedule": schedule, "jobTemplate": job_template}
    )


def service(**spec: Any) -> Obj:
    return obj(
        "v1", "Service", "web", spec={"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}
    )


def secret(**rest: Any) -> Obj:
    return obj("v1", "Secret", "creds", **rest)


def config_map(**rest: Any) -> Obj:
    return obj("v1", "ConfigMap", "settings", **rest)


def claim(**spec: Any) -> Obj:
    size = {"requests": {"storage": "1Gi"}}
    spec = {"accessModes": ["ReadWriteOnce"], "resources": size, **spec}
    return obj("v1", "PersistentVolumeClaim", "data", spec=spec)


def namespace(**spec: Any) -> Obj:
    return obj("v1", "Namespace", "team-a", namespace="", **({"spec": spec} if spec else {}))


# --- the table of strategies -------------------------------------------------------------


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: f"{r.group or 'core'}/{r.kind}")
def test_every_resource_has_a_kind_strategy_with_a_name_rule(resource: Resource) -> None:
    s = strategy_for(resource)
    assert isinstance(s, KindStrategy)
    assert s.name_validator("web") == []
    assert s.name_validator("a/b") != []


@pytest.mark.parametrize(
    ("api_version", "kind", "name", "valid"),
    [
        pytest.param("v1", "Namespace", "kube.system", False, id="namespace is a DNS label"),
        pytest.param("v1", "Service", "1web", False, id="service is a DNS-1035 label"),
        pytest.param("v1", "Pod", "web.example", True, id="pod is a DNS subdomain"),
        pytest.param("apps/v1", "StatefulSet", "web.v2", False, id="statefulset is a DNS label"),
        pytest.param("v1", "Event", "web.17a8f2c3d4e5", True, id="event is a path segment"),
        pytest.param(RBAC, "ClusterRole", "system:node", True, id="rbac is a path segment"),
    ],
)
def test_names_follow_each_kinds_rule(api_version: str, kind: str, name: str, valid: bool) -> None:
    assert (strategy(api_version, kind).name_validator(name) == []) == valid


# --- defaulting --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("spec.restartPolicy", "Always"),
        ("spec.dnsPolicy", "ClusterFirst"),
        ("spec.schedulerName", "default-scheduler"),
        ("spec.terminationGracePeriodSeconds", 30),
        ("spec.securityContext", {}),
        ("spec.enableServiceLinks", True),
        ("spec.containers.0.imagePullPolicy", "Always"),
        ("spec.containers.0.terminationMessagePath", "/dev/termination-log"),
        ("spec.containers.0.terminationMessagePolicy", "File"),
        ("spec.containers.0.resources", {}),
        ("status", {"phase": "Pending", "qosClass": "BestEffort"}),
        ("metadata.generation", 1),
    ],
)
def test_minimal_pod_gets_upstream_defaults(path: str, expected: Any) -> None:
    assert get(created(pod()), path) == expected


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
        ("registry.local:5000/nginx", "Always"),
        ("registry.local:5000/nginx:1.25", "IfNotPresent"),
    ],
)
def test_image_pull_policy_defaults_from_the_tag(image: str, policy: str) -> None:
    created_pod = created(pod(containers=[{"name": "web", "image": image}]))
    assert created_pod["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_container_ports_probes_and_env_get_defaults() -> None:
    node_name = {"fieldRef": {"fieldPath": "spec.nodeName"}}
    container = created(
        with_container(
            ports=[{"containerPort": 80}],
            livenessProbe={"httpGet": {"port": 80}},
            env=[{"name": "NODE", "valueFrom": node_name}],
        )
    )["spec"]["containers"][0]
    assert container["ports"][0]["protocol"] == "TCP"
    assert container["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert container["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"


def test_volumes_get_file_modes_and_a_bare_volume_is_an_empty_dir() -> None:
    volumes = [
        {"name": "scratch"},
        {"name": "config", "configMap": {"name": "settings"}},
        {"name": "creds", "secret": {"secretName": "creds"}},
    ]
    defaulted = created(pod(volumes=volumes))["spec"]["volumes"]
    assert defaulted[0]["emptyDir"] == {}
    assert defaulted[1]["configMap"]["defaultMode"] == 420
    assert defaulted[2]["secret"]["defaultMode"] == 420


def test_service_account_fields_are_kept_equal() -> None:
    spec = created(pod(serviceAccount="builder"))["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "builder"


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "100m"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Burstable"),
    ],
)
def test_pod_qos_class_is_computed_at_create(resources: Obj, qos: str) -> None:
    assert created(with_container(resources=resources))["status"]["qosClass"] == qos


def test_pod_requests_default_to_limits() -> None:
    container = created(with_container(resources={"limits": {"cpu": "1"}}))["spec"]["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "1"}


def test_pod_created_with_scheduling_gates_is_marked_gated() -> None:
    status = created(pod(schedulingGates=[{"name": "example.com/quota"}]))["status"]
    assert status["conditions"][0]["reason"] == "SchedulingGated"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("spec.replicas", 1),
        ("spec.strategy.type", "RollingUpdate"),
        ("spec.strategy.rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"}),
        ("spec.revisionHistoryLimit", 10),
        ("spec.progressDeadlineSeconds", 600),
        ("spec.template.spec.restartPolicy", "Always"),
        ("spec.template.spec.containers.0.imagePullPolicy", "IfNotPresent"),
        ("metadata.generation", 1),
    ],
)
def test_minimal_deployment_gets_upstream_defaults(path: str, expected: Any) -> None:
    assert get(created(deployment()), path) == expected


def test_pod_only_defaults_stay_out_of_templates() -> None:
    spec = created(deployment())["spec"]["template"]["spec"]
    assert "enableServiceLinks" not in spec
    assert "priority" not in spec


def test_statefulset_defaults() -> None:
    spec = created(workload("StatefulSet", serviceName="web"))["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    retention = spec["persistentVolumeClaimRetentionPolicy"]
    assert retention == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (1, 10)


def test_daemonset_defaults_and_template_generation() -> None:
    daemonset = created(workload("DaemonSet"))
    assert daemonset["spec"]["updateStrategy"]["rollingUpdate"] == {
        "maxUnavailable": 1,
        "maxSurge": 0,
    }
    annotations = daemonset["metadata"]["annotations"]
    assert annotations["deprecated.daemonset.template.generation"] == "1"


def test_job_gets_defaults_and_a_selector_generated_from_its_uid() -> None:
    created_job = created(job())
    spec = created_job["spec"]
    assert (spec["parallelism"], spec["completions"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert spec["manualSelector"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == labels["job-name"] == "pi"
    assert labels["batch.kubernetes.io/controller-uid"] == labels["controller-uid"] == UID
    assert created_job["metadata"]["labels"] == labels


def test_job_with_parallelism_only_leaves_completions_unset() -> None:
    assert "completions" not in created(job(parallelism=3))["spec"]


def test_cronjob_defaults() -> None:
    spec = created(cronjob("*/5 * * * *"))["spec"]
    assert spec["concurrencyPolicy"] == "Allow"
    assert spec["suspend"] is False
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)


def test_service_defaults() -> None:
    spec = created(service())["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert spec["ipFamilies"] == ["IPv4"]
    assert spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert "externalTrafficPolicy" not in spec
    assert created(service(type="NodePort"))["spec"]["externalTrafficPolicy"] == "Cluster"


def test_service_keeps_a_given_target_port() -> None:
    spec = created(service(ports=[{"port": 80, "targetPort": "http"}]))["spec"]
    assert spec["ports"][0]["targetPort"] == "http"


def test_secret_string_data_is_merged_into_base64_data() -> None:
    stored = created(
        secret(data={"user": "YWRtaW4="}, stringData={"password": "s3cret", "user": "root"})
    )
    assert stored["type"] == "Opaque"
    assert stored["data"] == {"user": "cm9vdA==", "password": "czNjcmV0"}
    assert "stringData" not in stored


def test_namespace_starts_active_with_the_kubernetes_finalizer_and_name_label() -> None:
    stored = created(namespace())
    assert stored["status"] == {"phase": "Active"}
    assert stored["spec"]["finalizers"] == ["kubernetes"]
    assert stored["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert "generation" not in stored["metadata"]


@pytest.mark.parametrize(
    ("stored", "path", "expected"),
    [
        pytest.param(claim(), "spec.volumeMode", "Filesystem", id="pvc volumeMode"),
        pytest.param(claim(), "status.phase", "Pending", id="pvc phase"),
        pytest.param(
            obj(
                "v1",
                "PersistentVolume",
                "pv1",
                namespace="",
                spec={
                    "accessModes": ["ReadWriteOnce"],
                    "capacity": {"storage": "1Gi"},
                    "hostPath": {"path": "/d"},
                },
            ),
            "spec.persistentVolumeReclaimPolicy",
            "Retain",
            id="pv reclaim policy",
        ),
        pytest.param(
            obj("scheduling.k8s.io/v1", "PriorityClass", "high", namespace="", value=1000),
            "preemptionPolicy",
            "PreemptLowerPriority",
            id="priority class preemption",
        ),
        pytest.param(
            obj(
                "discovery.k8s.io/v1",
                "EndpointSlice",
                addressType="IPv4",
                endpoints=[{"addresses": ["10.0.0.5"]}],
                ports=[{"port": 80}],
            ),
            "ports.0",
            {"port": 80, "name": "", "protocol": "TCP"},
            id="endpoint slice port",
        ),
    ],
)
def test_other_kinds_get_upstream_defaults(stored: Obj, path: str, expected: Any) -> None:
    assert get(created(stored), path) == expected


# --- validation of new objects -----------------------------------------------------------


def _case(case_id: str, invalid: Obj, path: str, error_type: str) -> Any:
    return pytest.param(invalid, path, error_type, id=case_id)


def _rolling(surge: Any, unavailable: Any) -> Obj:
    return {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
    }


INVALID_OBJECTS = [
    # containers
    _case("env name with '='", with_container(env=[{"name": "A=B", "value": "1"}]),
          "spec.containers[0].env[0].name", "Invalid"),
    _case("env name with a newline", with_container(env=[{"name": "A\n", "value": "1"}]),
          "spec.containers[0].env[0].name", "Invalid"),
    _case("resource name not standard",
          with_container(resources={"limits": {"gpu": "1"}, "requests": {"gpu": "1"}}),
          "spec.containers[0].resources.limits[gpu]", "Invalid"),
    _case("negative resource amount", with_container(resources={"requests": {"cpu": "-1"}}),
          "spec.containers[0].resources.requests[cpu]", "Invalid"),
    # workloads
    _case("negative replicas", deployment(replicas=-1), "spec.replicas", "Invalid"),
    _case(
        "selector does not match template labels",
        set_at(deployment(), "spec.template.metadata.labels", {"app": "db"}),
        "spec.template.metadata.labels",
        "Invalid",
    ),
    _case(
        "deployment pods must restart Always",
        set_at(deployment(), "spec.template.spec.restartPolicy", "Never"),
        "spec.template.spec.restartPolicy",
        "NotSupported",
    ),
    _case(
        "maxSurge and maxUnavailable both 0",
        deployment(strategy=_rolling(0, 0)),
        "spec.strategy.rollingUpdate.maxUnavailable",
        "Invalid",
    ),
    _case(
        "maxSurge neither int nor percent",
        deployment(strategy=_rolling("x", 1)),
        "spec.strategy.rollingUpdate.maxSurge",
        "Invalid",
    ),
    _case(
        "progress deadline within minReadySeconds",
        deployment(minReadySeconds=600, progressDeadlineSeconds=600),
        "spec.progressDeadlineSeconds",
        "Invalid",
    ),
    _case(
        "unknown pod management policy",
        workload("StatefulSet", podManagementPolicy="Random"),
        "spec.podManagementPolicy",
        "Invalid",
    ),
    _case(
        "daemonset without selector",
        workload("DaemonSet", selector=None),
        "spec.template.metadata.labels",
        "Invalid",
    ),
    # pods
    _case("no containers", pod(containers=[]), "spec.containers", "Required"),
    _case(
        "duplicate container names",
        pod(containers=[{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]),
        "spec.containers[1].name",
        "Duplicate",
    ),
    _case(
        "init container named like a container",
        pod(initContainers=[{"name": "web", "image": "busybox"}]),
        "spec.initContainers[0].name",
        "Duplicate",
    ),
    _case(
        "container name not a DNS label",
        pod(containers=[{"name": "Web_1", "image": "nginx"}]),
        "spec.containers[0].name",
        "Invalid",
    ),
    _case(
        "missing image", pod(containers=[{"name": "web"}]), "spec.containers[0].image", "Required"
    ),
    _case(
        "unknown restartPolicy",
        pod(restartPolicy="Sometimes"),
        "spec.restartPolicy",
        "NotSupported",
    ),
    _case("unknown dnsPolicy", pod(dnsPolicy="Google"), "spec.dnsPolicy", "NotSupported"),
    _case(
        "unknown imagePullPolicy",
        with_container(imagePullPolicy="Maybe"),
        "spec.containers[0].imagePullPolicy",
        "NotSupported",
    ),
    _case(
        "container port out of range",
        with_container(ports=[{"containerPort": 70000}]),
        "spec.containers[0].ports[0].containerPort",
        "Invalid",
    ),
    _case(
        "unknown port protocol",
        with_container(ports=[{"containerPort": 80, "protocol": "HTTP"}]),
        "spec.containers[0].ports[0].protocol",
        "NotSupported",
    ),
    _case(
        "mount of a volume the pod lacks",
        with_container(volumeMounts=[{"name": "data", "mountPath": "/data"}]),
        "spec.containers[0].volumeMounts[0].name",
        "NotFound",
    ),
    _case(
        "duplicate volume names",
        pod(volumes=[{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]),
        "spec.volumes[1].name",
        "Duplicate",
    ),
    _case(
        "requests above limits",
        with_container(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        "spec.containers[0].resources.requests",
        "Invalid",
    ),
    _case(
        "quantity that does not parse",
        with_container(resources={"limits": {"memory": "lots"}}),
        "spec.containers[0].resources.limits[memory]",
        "Invalid",
    ),
    _case(
        "env var without a name",
        with_container(env=[{"value": "x"}]),
        "spec.containers[0].env[0].name",
        "Required",
    ),
    _case(
        "liveness probe successThreshold above 1",
        with_container(livenessProbe={"exec": {"command": ["true"]}, "successThreshold": 2}),
        "spec.containers[0].livenessProbe.successThreshold",
        "Invalid",
    ),
    _case(
        "activeDeadlineSeconds of 0",
        pod(activeDeadlineSeconds=0),
        "spec.activeDeadlineSeconds",
        "Invalid",
    ),
    _case(
        "toleration with unknown operator",
        pod(tolerations=[{"key": "k", "operator": "Near"}]),
        "spec.tolerations[0].operator",
        "NotSupported",
    ),
    _case(
        "ephemeral containers on create",
        pod(ephemeralContainers=[{"name": "debug", "image": "busybox"}]),
        "spec.ephemeralContainers",
        "Forbidden",
    ),
    # services, config and secrets
    _case("service without ports", service(ports=[]), "spec.ports", "Required"),
    _case("service port 0", service(ports=[{"port": 0}]), "spec.ports[0].port", "Invalid"),
    _case(
        "unnamed port among several",
        service(ports=[{"port": 80}, {"name": "https", "port": 443}]),
        "spec.ports[0].name",
        "Required",
    ),
    _case("unknown service type", service(type="Magic"), "spec.type", "NotSupported"),
    _case(
        "config map key with a slash", config_map(data={"bad/key": "x"}), "data[bad/key]", "Invalid"
    ),
    _case(
        "tls secret without its key",
        secret(type="kubernetes.io/tls", data={"tls.crt": "Y2VydA=="}),
        "data[tls.key]",
        "Required",
    ),
    # batch
    _case(
        "job pods restarting Always",
        set_at(job(), "spec.template.spec.restartPolicy", "Always"),
        "spec.template.spec.restartPolicy",
        "Required",
    ),
    _case(
        "job pods with unknown restartPolicy",
        set_at(job(), "spec.template.spec.restartPolicy", "Sometimes"),
        "spec.template.spec.restartPolicy",
        "NotSupported",
    ),
    _case("negative backoffLimit", job(backoffLimit=-1), "spec.backoffLimit", "Invalid"),
    _case("negative parallelism", job(parallelism=-2), "spec.parallelism", "Invalid"),
    # everything else
    _case(
        "finalizer not qualified", namespace(finalizers=["custom"]), "spec.finalizers", "Invalid"
    ),
    _case("pvc without a size", claim(resources={}), "spec.resources[storage]", "Required"),
    _case(
        "user priority above 1e9",
        obj("scheduling.k8s.io/v1", "PriorityClass", "top", namespace="", value=2000000000),
        "value",
        "Forbidden",
    ),
    _case(
        "lease of zero seconds",
        obj("coordination.k8s.io/v1", "Lease", spec={"leaseDurationSeconds": 0}),
        "spec.leaseDurationSeconds",
        "Invalid",
    ),
    _case(
        "role rule without verbs",
        obj(RBAC, "Role", rules=[{"apiGroups": [""], "resources": ["pods"]}]),
        "rules[0].verbs",
        "Required",
    ),
    _case(
        "binding to an unknown role kind",
        obj(RBAC, "RoleBinding", roleRef={"kind": "Group", "name": "x"}),
        "roleRef.kind",
        "NotSupported",
    ),
    _case(
        "pdb with both budgets",
        obj("policy/v1", "PodDisruptionBudget", spec={"minAvailable": 1, "maxUnavailable": 1}),
        "spec",
        "Invalid",
    ),
]


@pytest.mark.parametrize(("invalid", "path", "error_type"), INVALID_OBJECTS)
def test_invalid_objects_are_rejected_at_the_right_field(
    invalid: Obj, path: str, error_type: str
) -> None:
    _, errors = create(invalid)
    assert (path, error_type) in fields_and_types(errors), [str(e) for e in errors]


def test_selector_mismatch_message_is_upstreams() -> None:
    _, errors = create(set_at(deployment(), "spec.template.metadata.labels", {"app": "db"}))
    assert str(errors[0]) == (
        'spec.template.metadata.labels: Invalid value: {"app":"db"}: '
        "`selector` does not match template `labels`"
    )


def test_missing_deployment_selector_is_required_and_selects_nothing() -> None:
    _, errors = create(deployment(selector=None))
    assert fields_and_types(errors) == [
        ("spec.selector", "Required"),
        ("spec.template.metadata.labels", "Invalid"),
    ]


def test_negative_replicas_message() -> None:
    _, errors = create(deployment(replicas=-1))
    assert [str(e) for e in errors] == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_restart_policy_message_lists_supported_values() -> None:
    _, errors = create(pod(restartPolicy="Sometimes"))
    assert [str(e) for e in errors] == [
        'spec.restartPolicy: Unsupported value: "Sometimes": '
        'supported values: "Always", "OnFailure", "Never"'
    ]


def test_config_key_message_is_upstreams() -> None:
    _, errors = create(config_map(data={"a b": "x"}))
    assert errors[0].detail.startswith(
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
    )


def test_job_selector_must_be_the_generated_one() -> None:
    _, errors = create(
        job(
            selector={"matchLabels": {"app": "pi"}},
            template=template({"app": "pi"}, restartPolicy="Never"),
        )
    )
    assert ("spec.selector", "Invalid") in fields_and_types(errors)


def test_job_with_manual_selector_keeps_it() -> None:
    selector = {"matchLabels": {"app": "pi"}}
    manual = job(
        manualSelector=True,
        selector=selector,
        template=template({"app": "pi"}, restartPolicy="Never"),
    )
    assert created(manual)["spec"]["selector"] == selector


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("*/5 * * *", "expected exactly 5 fields, found 4: [*/5 * * *]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ],
)
def test_cronjob_schedule_errors_carry_the_parsers_message(schedule: str, message: str) -> None:
    _, errors = create(cronjob(schedule))
    assert [(e.field, e.type, e.detail) for e in errors] == [("spec.schedule", "Invalid", message)]


def test_cronjob_schedule_may_not_carry_a_time_zone() -> None:
    _, errors = create(cronjob("TZ=UTC 0 * * * *"))
    assert [e.detail for e in errors] == [
        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    ]


@pytest.mark.parametrize(
    "schedule", ["*/5 * * * *", "0 3 * * mon-fri", "@hourly", "@every 1h30m", "0 0 1,15 jan,jul *"]
)
def test_valid_schedules_parse(schedule: str) -> None:
    parse_standard(schedule)


def test_schedule_steps_and_names_expand() -> None:
    parsed = parse_standard("*/20 9-17 * * mon-fri")
    assert parsed.minutes == {0, 20, 40}
    assert parsed.hours == set(range(9, 18))
    assert parsed.days_of_week == {1, 2, 3, 4, 5}
    with pytest.raises(CronSyntaxError, match="above maximum"):
        parse_standard("* * * * 7")


# --- updates -----------------------------------------------------------------------------


def test_deployment_selector_is_immutable() -> None:
    def change(new: Obj) -> None:
        new["spec"]["selector"]["matchLabels"]["tier"] = "front"
        new["spec"]["template"]["metadata"]["labels"]["tier"] = "front"

    _, errors = update(created(deployment()), change)
    assert only_error(errors) == ("spec.selector", "Invalid")
    assert errors[0].detail == "field is immutable"


def test_deployment_generation_grows_with_spec_and_annotations_only() -> None:
    old = created(deployment())
    scaled, _ = update(old, lambda d: d["spec"].update(replicas=3))
    annotated, _ = update(old, lambda d: d["metadata"].update(annotations={"a": "b"}))
    labelled, _ = update(old, lambda d: d["metadata"].update(labels={"a": "b"}))
    generations = [d["metadata"]["generation"] for d in (scaled, annotated, labelled)]
    assert generations == [2, 2, 1]


def test_update_keeps_the_stored_status() -> None:
    old = {**created(deployment()), "status": {"replicas": 1}}
    new, _ = update(old, lambda d: d.update(status={"replicas": 99}))
    assert new["status"] == {"replicas": 1}


def test_pod_spec_change_is_forbidden_with_upstreams_message() -> None:
    _, errors = update(created(pod()), lambda p: p["spec"].update(restartPolicy="Never"))
    assert only_error(errors) == ("spec", "Forbidden")
    assert errors[0].detail.startswith(
        "pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
        "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
        "(allow it to be set to 1 if it was previously negative)\n"
    )
    assert 'spec.restartPolicy: "Always" -> "Never"' in errors[0].detail


def test_pod_node_name_cannot_be_set_by_an_update() -> None:
    _, errors = update(created(pod()), lambda p: p["spec"].update(nodeName="node-1"))
    assert only_error(errors) == ("spec", "Forbidden")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda p: p["spec"]["containers"][0].update(image="nginx:1.27"), id="image"),
        pytest.param(lambda p: p["spec"].update(activeDeadlineSeconds=60), id="deadline"),
        pytest.param(
            lambda p: p["spec"].update(
                tolerations=[*p["spec"].get("tolerations", []), {"key": "k", "operator": "Exists"}]
            ),
            id="added toleration",
        ),
        pytest.param(lambda p: p["metadata"].update(labels={"app": "web"}), id="labels"),
    ],
)
def test_allowed_pod_updates_pass(change: Callable[[Obj], Any]) -> None:
    _, errors = update(created(pod()), change)
    assert errors == [], [str(e) for e in errors]


def test_pod_image_change_bumps_generation() -> None:
    new, _ = update(created(pod()), lambda p: p["spec"]["containers"][0].update(image="nginx:2"))
    assert new["metadata"]["generation"] == 2


def test_removing_a_container_is_forbidden() -> None:
    old = created(pod(containers=[{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]))
    _, errors = update(old, lambda p: p["spec"]["containers"].pop())
    assert only_error(errors) == ("spec.containers", "Forbidden")


def test_scheduling_gates_may_only_be_removed() -> None:
    old = created(pod(schedulingGates=[{"name": "example.com/a"}]))
    _, errors = update(old, lambda p: p["spec"].update(schedulingGates=[]))
    assert errors == []
    _, errors = update(
        old, lambda p: p["spec"]["schedulingGates"].append({"name": "example.com/b"})
    )
    assert only_error(errors) == ("spec.schedulingGates[1].name", "Forbidden")


def test_pod_status_update_keeps_spec_and_qos_class() -> None:
    s = strategy("v1", "Pod")
    old = created(pod())
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "sneaky"
    new["status"] = {"phase": "Running"}
    s.prepare_for_status_update(new, old)
    assert "nodeName" not in new["spec"]
    assert new["status"] == {"phase": "Running", "qosClass": "BestEffort"}
    assert s.validate_status_update(new, old) == []
    new["status"]["qosClass"] = "Guaranteed"
    assert only_error(s.validate_status_update(new, old)) == ("status.qosClass", "Invalid")


def test_service_cluster_ip_is_immutable_once_set_and_kept_when_omitted() -> None:
    old = created(service(clusterIP="10.96.0.10"))
    assert old["spec"]["clusterIPs"] == ["10.96.0.10"]
    _, errors = update(old, lambda s: s["spec"].update(clusterIP="10.96.0.11"))
    assert only_error(errors) == ("spec.clusterIPs[0]", "Invalid")
    new, errors = update(old, lambda s: (s["spec"].pop("clusterIP"), s["spec"].pop("clusterIPs")))
    assert errors == []
    assert new["spec"]["clusterIP"] == "10.96.0.10"


def test_service_switched_to_external_name_drops_its_cluster_ip() -> None:
    old = created(service(clusterIP="10.96.0.10"))
    external = {"type": "ExternalName", "externalName": "db.example.com"}
    new, errors = update(old, lambda s: s["spec"].update(external))
    assert errors == [], [str(e) for e in errors]
    assert "clusterIP" not in new["spec"]
    assert "ipFamilies" not in new["spec"]


def test_job_template_is_immutable() -> None:
    old = created(job())
    _, errors = update(
        old, lambda j: j["spec"]["template"]["spec"]["containers"][0].update(image="perl:5")
    )
    assert only_error(errors) == ("spec.template", "Invalid")


def test_suspended_job_may_change_its_scheduling_directives() -> None:
    old = created(job(suspend=True))
    _, errors = update(
        old, lambda j: j["spec"]["template"]["spec"].update(nodeSelector={"disk": "ssd"})
    )
    assert errors == [], [str(e) for e in errors]


def test_immutable_config_map_rejects_data_changes() -> None:
    old = created(config_map(data={"a": "1"}, immutable=True))
    _, errors = update(old, lambda c: c["data"].update(a="2"))
    assert only_error(errors) == ("data", "Forbidden")


def test_secret_type_is_immutable() -> None:
    old = created(secret(data={"a": "MQ=="}))
    _, errors = update(old, lambda s: s.update(type="example.com/custom"))
    assert only_error(errors) == ("type", "Invalid")


def test_statefulset_only_replicas_template_and_strategies_may_change() -> None:
    old = created(workload("StatefulSet", serviceName="web"))
    _, errors = update(old, lambda s: s["spec"].update(replicas=5))
    assert errors == []
    _, errors = update(old, lambda s: s["spec"].update(serviceName="other"))
    assert only_error(errors) == ("spec", "Forbidden")


def test_daemonset_template_change_bumps_template_generation() -> None:
    old = created(workload("DaemonSet"))
    new, _ = update(old, lambda d: d["spec"]["template"]["spec"]["containers"][0].update(image="x"))
    assert new["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"
    assert new["metadata"]["generation"] == 2


def test_pvc_spec_is_immutable_but_a_bound_claim_may_grow() -> None:
    old = created(claim())
    _, errors = update(old, lambda c: c["spec"].update(accessModes=["ReadWriteMany"]))
    assert only_error(errors) == ("spec", "Forbidden")
    bound = {**old, "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}
    _, errors = update(bound, lambda c: c["spec"]["resources"]["requests"].update(storage="2Gi"))
    assert errors == []


def test_role_binding_gets_api_groups_and_keeps_its_role_ref() -> None:
    binding = obj(
        RBAC,
        "RoleBinding",
        "b",
        roleRef={"kind": "Role", "name": "reader"},
        subjects=[{"kind": "User", "name": "alice"}],
    )
    old = created(binding)
    assert (
        old["roleRef"]["apiGroup"] == old["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"
    )
    _, errors = update(old, lambda b: b["roleRef"].update(name="writer"))
    assert only_error(errors) == ("roleRef", "Invalid")


def test_config_maps_have_no_generation() -> None:
    old = created(config_map(data={"a": "1"}))
    new, _ = update(old, lambda c: c["data"].update(a="2"))
    assert "generation" not in old["metadata"]
    assert "generation" not in new["metadata"]


# --- deletion ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "status", "requested", "seconds"),
    [
        pytest.param({"nodeName": "n1"}, {}, None, 30, id="the pod's grace period"),
        pytest.param({"nodeName": "n1"}, {}, 5, 5, id="the requested period"),
        pytest.param({}, {}, None, 0, id="never scheduled"),
        pytest.param({"nodeName": "n1"}, {"phase": "Succeeded"}, None, 0, id="already finished"),
        pytest.param(
            {"nodeName": "n1", "terminationGracePeriodSeconds": -5}, {}, None, 1, id="negative"
        ),
    ],
)
def test_pod_graceful_deletion_period(
    spec: Obj, status: Obj, requested: int | None, seconds: int
) -> None:
    stored = created(pod())
    stored["spec"].update(spec)
    stored["status"].update(status)
    assert strategy("v1", "Pod").graceful_delete_seconds(stored, requested) == seconds


def test_namespace_deletion_marks_it_terminating_until_finalized() -> None:
    s = strategy("v1", "Namespace")
    stored = created(namespace())
    assert s.blocks_deletion(stored)
    s.prepare_for_delete(stored)
    assert stored["status"]["phase"] == "Terminating"
    del stored["spec"]["finalizers"]
    assert not s.blocks_deletion(stored)


# --- field selectors ---------------------------------------------------------------------


def test_pod_field_set() -> None:
    stored = created(pod(nodeName="node-1"))
    stored["status"]["podIPs"] = [{"ip": "10.244.1.5"}]
    assert strategy("v1", "Pod").field_set(stored) == {
        "metadata.name": "web",
        "metadata.namespace": "default",
        "spec.nodeName": "node-1",
        "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler",
        "spec.serviceAccountName": "",
        "spec.hostNetwork": "false",
        "status.phase": "Pending",
        "status.podIP": "10.244.1.5",
        "status.nominatedNodeName": "",
    }


EVENT = obj(
    "v1",
    "Event",
    "web.1",
    involvedObject={"kind": "Pod", "name": "web", "namespace": "default"},
    reason="Scheduled",
    source={"component": "default-scheduler"},
    type="Normal",
)


@pytest.mark.parametrize(
    ("stored", "field", "value"),
    [
        pytest.param(
            obj("v1", "Node", "n1", namespace="", spec={"unschedulable": True}),
            "spec.unschedulable",
            "true",
            id="node",
        ),
        pytest.param(namespace(), "status.phase", "Active", id="namespace"),
        pytest.param(
            secret(type="kubernetes.io/tls", data={"tls.crt": "", "tls.key": ""}),
            "type",
            "kubernetes.io/tls",
            id="secret",
        ),
        pytest.param(EVENT, "source", "default-scheduler", id="event source"),
        pytest.param(EVENT, "involvedObject.name", "web", id="event involved object"),
        pytest.param(workload("ReplicaSet"), "status.replicas", "0", id="replicaset"),
        pytest.param(job(), "status.successful", "0", id="job"),
    ],
)
def test_kind_specific_field_selectors(stored: Obj, field: str, value: str) -> None:
    s = strategy(stored["apiVersion"], stored["kind"])
    assert s.field_set(created(stored))[field] == value


# --- pods/binding ----------------------------------------------------------------------------


def test_a_binding_changes_only_its_copy_of_the_stored_pod() -> None:
    stored = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "p", "namespace": "default", "uid": UID,
                           "resourceVersion": "7", "annotations": {"keep": "me"}},
              "spec": {"containers": [{"name": "c", "image": "busybox"}]},
              "status": {"phase": "Pending", "conditions": [
                  {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}
    before = copy.deepcopy(stored)

    bound = assign_pod(assigned_copy(stored), "p", "node-1", {"annotations": {"by": "me"}})
    bound["metadata"]["resourceVersion"] = "8"

    assert stored == before
    assert bound["spec"]["nodeName"] == "node-1"
    assert bound["metadata"]["annotations"] == {"keep": "me", "by": "me"}
    assert [(c["type"], c["status"]) for c in bound["status"]["conditions"]] == [
        ("PodScheduled", "True")]


def test_well_formed_env_names_and_resource_names_pass() -> None:
    created(with_container(
        env=[{"name": "A b.c-d_~!", "value": "1"}],
        resources={"limits": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi",
                              "example.com/gpu": "1", "hugepages-2Mi": "2Mi"},
                   "requests": {"cpu": "500m", "memory": "1Gi", "example.com/gpu": "1"}}))
