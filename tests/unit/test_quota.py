"""Quota evaluation (minikube_py.api.quota) counts as upstream's evaluators do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minikube_py.api import Obj, quota
from minikube_py.api.quantity import Quantity

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def rl(**amounts: str) -> quota.ResourceList:
    """A ResourceList from keyword arguments; `__` stands for `.` in a name."""
    return {name.replace("__", "."): Quantity.parse(value) for name, value in amounts.items()}


def wire(resources: quota.ResourceList) -> dict[str, str]:
    return quota.format_resource_list(resources)


def container(name: str, requests: dict[str, str] | None = None,
              limits: dict[str, str] | None = None, **extra: Any) -> Obj:
    resources = {key: value for key, value in (("requests", requests), ("limits", limits))
                 if value is not None}
    return {"name": name, "image": "busybox", "resources": resources, **extra}


def pod(*containers: Obj, init: tuple[Obj, ...] = (), status: Obj | None = None,
        metadata: Obj | None = None, **spec: Any) -> Obj:
    return {"metadata": {"name": "p", "namespace": "ns", **(metadata or {})},
            "spec": {"containers": list(containers), "initContainers": list(init), **spec},
            "status": status or {"phase": "Running"}}


def pod_usage(obj: Obj) -> dict[str, str]:
    return wire(quota.usage("pods", "", obj, NOW))


# -- pods -----------------------------------------------------------------------------------


def test_pod_counts_the_sum_of_its_containers_requests_and_limits() -> None:
    obj = pod(container("a", {"cpu": "250m", "memory": "64Mi"}, {"cpu": "500m", "memory": "128Mi"}),
              container("b", {"cpu": "250m", "memory": "64Mi", "ephemeral-storage": "1Gi"}))
    assert pod_usage(obj) == {
        "count/pods": "1", "pods": "1",
        "cpu": "500m", "requests.cpu": "500m", "limits.cpu": "500m",
        "memory": "128Mi", "requests.memory": "128Mi", "limits.memory": "128Mi",
        "ephemeral-storage": "1Gi", "requests.ephemeral-storage": "1Gi",
    }


def test_an_init_container_raises_the_pod_to_its_own_request_and_overhead_adds_on_top() -> None:
    obj = pod(container("app", {"cpu": "500m", "memory": "100Mi"}, {"memory": "200Mi"}),
              init=(container("init", {"cpu": "2", "memory": "50Mi"}),),
              overhead={"cpu": "100m", "memory": "10Mi"})
    usage = pod_usage(obj)
    assert usage["requests.cpu"] == "2100m"  # max(500m, 2) + overhead
    assert usage["requests.memory"] == "110Mi"
    assert usage["limits.memory"] == "210Mi"  # overhead added to a limit that is set...
    assert "limits.cpu" not in usage  # ...and never creates one


def test_sidecars_add_up_and_raise_the_init_containers_after_them() -> None:
    sidecar = container("proxy", {"cpu": "100m"}, restartPolicy="Always")
    obj = pod(container("app", {"cpu": "200m"}),
              init=(sidecar, container("migrate", {"cpu": "250m"})))
    # Running: app + sidecar = 300m; while migrating: sidecar + migrate = 350m.
    assert pod_usage(obj)["requests.cpu"] == "350m"


def test_pod_level_resources_replace_the_containers_sum() -> None:
    obj = pod(container("a", {"cpu": "100m", "memory": "10Mi"}),
              resources={"requests": {"cpu": "1"}, "limits": {"cpu": "2"}})
    usage = pod_usage(obj)
    assert (usage["requests.cpu"], usage["limits.cpu"], usage["requests.memory"]) == (
        "1", "2", "10Mi")


def test_extended_resources_and_hugepages_count_as_requests() -> None:
    obj = pod(container("a", {"example.com/gpu": "2", "hugepages-2Mi": "4Mi"},
                        {"example.com/gpu": "2", "hugepages-2Mi": "4Mi"}))
    usage = pod_usage(obj)
    assert usage["requests.example.com/gpu"] == "2"
    assert "example.com/gpu" not in usage and "limits.example.com/gpu" not in usage
    assert usage["hugepages-2Mi"] == usage["requests.hugepages-2Mi"] == "4Mi"


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_only_counts_as_an_object(phase: str) -> None:
    obj = pod(container("a", {"cpu": "1"}), status={"phase": phase})
    assert pod_usage(obj) == {"count/pods": "1"}


def test_a_deleted_pod_counts_until_its_grace_period_has_passed() -> None:
    def deleted(seconds_ago: int) -> Obj:
        stamp = (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return pod(container("a", {"cpu": "1"}), metadata={
            "deletionTimestamp": stamp, "deletionGracePeriodSeconds": 30})

    assert pod_usage(deleted(10))["requests.cpu"] == "1"
    assert pod_usage(deleted(31)) == {"count/pods": "1"}


def test_matching_resources_of_pods() -> None:
    hard = ["pods", "count/pods", "requests.cpu", "limits.memory", "hugepages-1Gi",
            "requests.example.com/gpu", "services", "count/deployments.apps",
            "requests.storage"]
    assert quota.matching_resources("pods", "", hard) == [
        "count/pods", "hugepages-1Gi", "limits.memory", "pods", "requests.cpu",
        "requests.example.com/gpu"]


# -- services, claims, everything else ----------------------------------------------------------


def service(kind: str, ports: int = 2, **spec: Any) -> Obj:
    return {"metadata": {"name": "s"},
            "spec": {"type": kind, "ports": [{"port": 80 + i} for i in range(ports)], **spec}}


@pytest.mark.parametrize(("svc", "node_ports", "load_balancers"), [
    (service("ClusterIP"), "0", "0"),
    (service("NodePort"), "2", "0"),
    (service("LoadBalancer", 3), "3", "1"),
])
def test_service_counts_node_ports_and_load_balancers(svc: Obj, node_ports: str,
                                                      load_balancers: str) -> None:
    assert wire(quota.usage("services", "", svc)) == {
        "count/services": "1", "services": "1", "services.loadbalancers": load_balancers,
        "services.nodeports": node_ports}


def test_load_balancer_without_node_port_allocation_counts_only_explicit_node_ports() -> None:
    svc = service("LoadBalancer", allocateLoadBalancerNodePorts=False)
    svc["spec"]["ports"][0]["nodePort"] = 30080
    assert wire(quota.usage("services", "", svc))["services.nodeports"] == "1"


def claim(storage: str, storage_class: str | None = "gold", allocated: str | None = None,
          annotations: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"resources": {"requests": {"storage": storage}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    status = {"allocatedResources": {"storage": allocated}} if allocated else {}
    return {"metadata": {"name": "c", "annotations": annotations or {}}, "spec": spec,
            "status": status}


def test_claim_counts_its_storage_also_under_its_storage_class() -> None:
    assert wire(quota.usage("persistentvolumeclaims", "", claim("10Gi"))) == {
        "count/persistentvolumeclaims": "1", "persistentvolumeclaims": "1",
        "requests.storage": "10Gi",
        "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
        "gold.storageclass.storage.k8s.io/requests.storage": "10Gi"}


def test_claim_storage_is_whole_bytes_and_the_larger_of_requested_and_allocated() -> None:
    assert wire(quota.usage("persistentvolumeclaims", "", claim("1.5", None)))[
        "requests.storage"] == "2"
    expanded = claim("1Gi", allocated="2Gi")
    assert wire(quota.usage("persistentvolumeclaims", "", expanded))["requests.storage"] == "2Gi"


def test_the_beta_storage_class_annotation_wins_over_the_field() -> None:
    annotated = claim("1Gi", annotations={quota.BETA_STORAGE_CLASS_ANNOTATION: "silver"})
    assert quota.storage_class_of(annotated) == "silver"


def test_claim_storage_class_names_match_by_suffix() -> None:
    hard = ["gold.storageclass.storage.k8s.io/requests.storage", "requests.storage",
            "persistentvolumeclaims", "requests.cpu"]
    assert quota.matching_resources("persistentvolumeclaims", "", hard) == [
        "gold.storageclass.storage.k8s.io/requests.storage", "persistentvolumeclaims",
        "requests.storage"]


@pytest.mark.parametrize(("plural", "group", "expected"), [
    ("deployments", "apps", {"count/deployments.apps": "1"}),
    ("jobs", "batch", {"count/jobs.batch": "1"}),
    ("serviceaccounts", "", {"count/serviceaccounts": "1"}),
    ("configmaps", "", {"configmaps": "1", "count/configmaps": "1"}),
    ("secrets", "", {"count/secrets": "1", "secrets": "1"}),
    ("replicationcontrollers", "", {"count/replicationcontrollers": "1",
                                    "replicationcontrollers": "1"}),
    ("resourcequotas", "", {"count/resourcequotas": "1", "resourcequotas": "1"}),
    ("events", "", {}),
])
def test_other_objects_count_once_under_count_and_legacy_names(
        plural: str, group: str, expected: dict[str, str]) -> None:
    assert wire(quota.usage(plural, group, {"metadata": {"name": "x"}})) == expected


def test_update_filter_replenishes_only_when_usage_can_change() -> None:
    running = pod(container("a", {"cpu": "1"}))
    done = pod(container("a", {"cpu": "1"}), status={"phase": "Succeeded"})
    assert quota.update_changes_usage("pods", "", running, done, NOW)
    assert not quota.update_changes_usage("pods", "", done, running, NOW)
    assert quota.update_changes_usage("services", "", service("ClusterIP"), service("NodePort"))
    assert not quota.update_changes_usage("services", "", service("ClusterIP", 1),
                                          service("ClusterIP", 3))
    assert quota.update_changes_usage("persistentvolumeclaims", "", claim("1Gi"),
                                      claim("1Gi", allocated="2Gi"))
    assert not quota.update_changes_usage("configmaps", "", {}, {"data": {"a": "b"}})


# -- scopes -----------------------------------------------------------------------------------


BEST_EFFORT = pod(container("a"))
BURSTABLE = pod(container("a", {"cpu": "100m"}))
DEADLINE = pod(container("a"), activeDeadlineSeconds=60)
HIGH = pod(container("a"), priorityClassName="high")


@pytest.mark.parametrize(("scope", "selected"), [
    ("BestEffort", [BEST_EFFORT, DEADLINE, HIGH]),
    ("NotBestEffort", [BURSTABLE]),
    ("Terminating", [DEADLINE]),
    ("NotTerminating", [BEST_EFFORT, BURSTABLE, HIGH]),
    ("PriorityClass", [HIGH]),
])
def test_scopes_select_pods(scope: str, selected: list[Obj]) -> None:
    spec = {"scopes": [scope]}
    assert [p for p in (BEST_EFFORT, BURSTABLE, DEADLINE, HIGH)
            if quota.matches_scopes(spec, p)] == selected


def test_best_effort_follows_the_recorded_qos_class() -> None:
    recorded = pod(container("a", {"cpu": "1"}), status={"phase": "Running",
                                                         "qosClass": "BestEffort"})
    assert quota.matches_scopes({"scopes": ["BestEffort"]}, recorded)


@pytest.mark.parametrize(("operator", "values", "selected"), [
    ("In", ["high", "low"], [HIGH]),
    ("NotIn", ["high"], [BEST_EFFORT]),
    ("Exists", [], [HIGH]),
    ("DoesNotExist", [], [BEST_EFFORT]),
])
def test_scope_selector_on_priority_class(operator: str, values: list[str],
                                          selected: list[Obj]) -> None:
    spec = {"scopeSelector": {"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": operator, "values": values}]}}
    assert [p for p in (BEST_EFFORT, HIGH) if quota.matches_scopes(spec, p)] == selected


def test_all_scopes_must_match() -> None:
    spec = {"scopes": ["BestEffort", "Terminating"]}
    assert [p for p in (BEST_EFFORT, DEADLINE) if quota.matches_scopes(spec, p)] == [DEADLINE]


def test_cross_namespace_pod_affinity_scope() -> None:
    term = {"labelSelector": {}, "topologyKey": "zone", "namespaces": ["other"]}
    affine = pod(container("a"), affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    spec = {"scopes": ["CrossNamespacePodAffinity"]}
    assert quota.matches_scopes(spec, affine) and not quota.matches_scopes(spec, BEST_EFFORT)


def test_objects_other_than_pods_match_only_unscoped_quotas() -> None:
    configmap = {"metadata": {"name": "c"}}
    assert quota.matches_scopes({}, configmap, "configmaps", "")
    assert not quota.matches_scopes({"scopes": ["NotTerminating"]}, configmap, "configmaps", "")


def test_matches_needs_a_tracked_name_in_status_hard_and_the_scopes() -> None:
    tracked = {"spec": {"scopes": ["BestEffort"]}, "status": {"hard": {"pods": "5"}}}
    assert quota.matches(tracked, "pods", "", BEST_EFFORT)
    assert not quota.matches(tracked, "pods", "", BURSTABLE)
    assert not quota.matches(tracked, "services", "", service("ClusterIP"))


# -- calculate_usage --------------------------------------------------------------------------


def test_calculate_usage_sums_a_namespace_and_reports_zero_for_unused_names() -> None:
    objects = {
        ("", "pods"): [pod(container("a", {"cpu": "250m"})), pod(container("b", {"cpu": "1"}))],
        ("", "configmaps"): [],
        ("apps", "deployments"): [{"metadata": {"name": "d"}}],
    }
    spec = {"hard": {"pods": "10", "requests.cpu": "4", "requests.memory": "1Gi",
                     "configmaps": "5", "count/deployments.apps": "2",
                     "count/widgets.example.com": "1"}}
    used = quota.calculate_usage(spec, objects, lambda group, plural: objects[(group, plural)],
                                 NOW)
    assert wire(used) == {"configmaps": "0", "count/deployments.apps": "1", "pods": "2",
                          "requests.cpu": "1250m", "requests.memory": "0"}


def test_a_scoped_quota_counts_only_the_pods_it_selects() -> None:
    objects = {("", "pods"): [BEST_EFFORT, BURSTABLE], ("", "configmaps"): [{"metadata": {}}]}
    spec = {"hard": {"pods": "10", "configmaps": "10"}, "scopes": ["NotBestEffort"]}
    used = quota.calculate_usage(spec, objects, lambda group, plural: objects[(group, plural)],
                                 NOW)
    assert wire(used) == {"configmaps": "0", "pods": "1"}


# -- resource lists, admission's check and message ---------------------------------------------


def test_arithmetic_keeps_the_first_non_zero_format() -> None:
    total = quota.add(rl(memory="1Gi", cpu="0"), rl(memory="512Mi", cpu="1500m", pods="1"))
    assert wire(total) == {"cpu": "1500m", "memory": "1536Mi", "pods": "1"}
    assert wire(quota.subtract(rl(cpu="1"), rl(cpu="250m", pods="1"))) == {
        "cpu": "750m", "pods": "-1"}


def test_mask_equals_and_zeros() -> None:
    assert wire(quota.mask(rl(cpu="1", pods="2"), ["pods", "services"])) == {"pods": "2"}
    assert quota.equals(rl(memory="1Gi"), rl(memory="1073741824"))
    assert not quota.equals(rl(memory="1Gi"), rl(memory="1Gi", pods="0"))
    assert wire(quota.remove_zeros(rl(cpu="0", pods="1"))) == {"pods": "1"}
    assert quota.negative(rl(cpu="-1", pods="1")) == ["cpu"]


def test_exceeded_names_only_what_the_request_would_push_past_hard() -> None:
    hard = rl(pods="2", requests__cpu="1", requests__memory="1Gi")
    used = rl(pods="2", requests__cpu="500m", requests__memory="1Gi")
    requested = rl(pods="1", requests__cpu="500m", requests__memory="0", limits__cpu="9")
    assert quota.exceeded(hard, used, requested) == ["pods"]
    assert quota.exceeded(hard, used, rl(requests__cpu="600m", pods="1")) == [
        "pods", "requests.cpu"]


def test_exceeded_quota_message_matches_upstream() -> None:
    hard = rl(pods="2", requests__cpu="1", requests__memory="1Gi")
    used = rl(pods="2", requests__cpu="0.5", requests__memory="512Mi")
    requested = rl(pods="1", requests__cpu="600m", requests__memory="128Mi")
    names = quota.exceeded(hard, used, requested)
    assert quota.exceeded_quota_message("compute", names, requested, used, hard) == (
        "exceeded quota: compute, requested: pods=1,requests.cpu=600m, "
        "used: pods=2,requests.cpu=500m, limited: pods=2,requests.cpu=1")


def test_pods_must_state_the_cpu_and_memory_a_quota_tracks() -> None:
    obj = pod(container("app", {"cpu": "1"}), container("web", {"cpu": "1", "memory": "1Gi"}),
              init=(container("init"),))
    required = ["requests.cpu", "limits.memory", "pods", "requests.storage"]
    assert quota.constraints("pods", "", required, obj) == (
        "must specify limits.memory for: app,init,web; requests.cpu for: init")
    assert quota.constraints("pods", "", ["pods"], obj) is None
    assert quota.constraints("services", "", required, service("NodePort")) is None
