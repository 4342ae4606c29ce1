"""Server-side printing: the cells `kubectl get` shows must be upstream's, string for string."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minikube_py.api.duration import human_duration
from minikube_py.api.resources import RESOURCES, lookup
from minikube_py.apiserver.endpoints.tables import column_definitions, table_row_cells, to_table

NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)

PODS = lookup("", "v1", "pods")
NODES = lookup("", "v1", "nodes")
SERVICES = lookup("", "v1", "services")
DEPLOYMENTS = lookup("apps", "v1", "deployments")
JOBS = lookup("batch", "v1", "jobs")
EVENTS = lookup("", "v1", "events")
EVENTS_V1 = lookup("events.k8s.io", "v1", "events")
ROLES = lookup("rbac.authorization.k8s.io", "v1", "roles")


def ago(**delta: float) -> str:
    """An RFC3339 timestamp `delta` before NOW."""
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def cells_by_name(resource: Any, obj: dict[str, Any]) -> dict[str, Any]:
    names = [column["name"] for column in column_definitions(resource)]
    return dict(zip(names, table_row_cells(resource, obj, NOW), strict=True))


# --- durations (cases from upstream's duration_test.go) --------------------------------


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (timedelta(seconds=-2), "<invalid>"),
        (timedelta(seconds=-2, microseconds=1), "0s"),
        (timedelta(0), "0s"),
        (timedelta(milliseconds=999), "0s"),
        (timedelta(seconds=1), "1s"),
        (timedelta(seconds=70), "70s"),
        (timedelta(minutes=2, milliseconds=-1), "119s"),
        (timedelta(minutes=2), "2m"),
        (timedelta(minutes=2, seconds=1), "2m1s"),
        (timedelta(seconds=190), "3m10s"),
        (timedelta(minutes=10, milliseconds=-1), "9m59s"),
        (timedelta(minutes=10, seconds=1), "10m"),
        (timedelta(minutes=70), "70m"),
        (timedelta(hours=3, milliseconds=-1), "179m"),
        (timedelta(hours=3), "3h"),
        (timedelta(hours=3, minutes=1), "3h1m"),
        (timedelta(hours=8, milliseconds=-1), "7h59m"),
        (timedelta(hours=8, minutes=59), "8h"),
        (timedelta(hours=47), "47h"),
        (timedelta(days=2), "2d"),
        (timedelta(hours=49), "2d1h"),
        (timedelta(days=8, milliseconds=-1), "7d23h"),
        (timedelta(hours=8 * 24 + 2), "8d"),
        (timedelta(days=367), "367d"),
        (timedelta(days=2 * 365, milliseconds=-1), "729d"),
        (timedelta(days=2 * 365), "2y"),
        (timedelta(days=2 * 365, hours=23, minutes=59), "2y"),
        (timedelta(hours=365 * 2 * 24 + 25), "2y1d"),
        (timedelta(days=8 * 365, milliseconds=-1), "7y364d"),
        (timedelta(hours=365 * 8 * 24 + 2), "8y"),
        (timedelta(days=9 * 365), "9y"),
    ],
)
def test_human_duration_matches_upstream(delta: timedelta, expected: str) -> None:
    assert human_duration(delta) == expected



# --- pods ------------------------------------------------------------------------------


def pod(
    status: dict[str, Any],
    *,
    containers: int = 1,
    init_containers: list[dict[str, Any]] | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}"} for i in range(containers)]}
    if init_containers is not None:
        spec["initContainers"] = init_containers
    return {
        "metadata": {"name": "web", "creationTimestamp": ago(minutes=5), **metadata},
        "spec": spec,
        "status": status,
    }


def running(ready: bool = True, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {"ready": ready, "restartCount": restarts, "state": {"running": {}}, **extra}


def waiting(reason: str, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {"ready": False, "restartCount": restarts, "state": {"waiting": {"reason": reason}},
            **extra}


def terminated(restarts: int = 0, **state: Any) -> dict[str, Any]:
    return {"ready": False, "restartCount": restarts, "state": {"terminated": state}}


def last_terminated(**delta: float) -> dict[str, Any]:
    return {"lastState": {"terminated": {"finishedAt": ago(**delta)}}}


READY_TRUE = {"type": "Ready", "status": "True"}

POD_CASES = [
    ("pending_unscheduled", pod({"phase": "Pending"}), "0/1", "Pending", "0"),
    (
        "container_creating",
        pod({"phase": "Pending", "containerStatuses": [waiting("ContainerCreating")]}),
        "0/1", "ContainerCreating", "0",
    ),
    (
        "running",
        pod({"phase": "Running", "containerStatuses": [running()]}),
        "1/1", "Running", "0",
    ),
    (
        "running_one_of_two_ready",
        pod({"phase": "Running", "containerStatuses": [running(), running(ready=False)]},
            containers=2),
        "1/2", "Running", "0",
    ),
    (
        "crash_loop_back_off",
        pod({"phase": "Running", "containerStatuses": [
            waiting("CrashLoopBackOff", restarts=5, **last_terminated(minutes=2))]}),
        "0/1", "CrashLoopBackOff", "5 (2m ago)",
    ),
    (
        "image_pull_error",
        pod({"phase": "Pending", "containerStatuses": [waiting("ErrImagePull")]}),
        "0/1", "ErrImagePull", "0",
    ),
    (
        "restarted_five_days_ago",
        pod({"phase": "Running", "containerStatuses": [
            running(restarts=3, **last_terminated(days=5))]}),
        "1/1", "Running", "3 (5d ago)",
    ),
    (
        "restarts_summed_with_latest_restart",
        pod({"phase": "Running", "containerStatuses": [
            running(restarts=6, **last_terminated(days=5)),
            running(restarts=3, **last_terminated(days=20))]}, containers=2),
        "2/2", "Running", "9 (5d ago)",
    ),
    (
        "completed",
        pod({"phase": "Succeeded", "containerStatuses": [
            terminated(reason="Completed", exitCode=0)]}),
        "0/1", "Completed", "0",
    ),
    (
        "error",
        pod({"phase": "Failed", "containerStatuses": [terminated(reason="Error", exitCode=1)]}),
        "0/1", "Error", "0",
    ),
    (
        "exit_code_without_reason",
        pod({"phase": "Failed", "containerStatuses": [terminated(exitCode=137)]}),
        "0/1", "ExitCode:137", "0",
    ),
    (
        "signal_without_reason",
        pod({"phase": "Failed", "containerStatuses": [terminated(exitCode=0, signal=9)]}),
        "0/1", "Signal:9", "0",
    ),
    (
        "completed_container_beside_running_one_without_ready",
        pod({"phase": "Running", "containerStatuses": [
            terminated(reason="Completed", exitCode=0), running()]}, containers=2),
        "1/2", "NotReady", "0",
    ),
    (
        "completed_container_beside_running_one_with_ready",
        pod({"phase": "Running", "conditions": [READY_TRUE], "containerStatuses": [
            terminated(reason="Completed", exitCode=0), running()]}, containers=2),
        "1/2", "Running", "0",
    ),
    (
        "init_waiting_for_first_of_two",
        pod({"phase": "Pending", "initContainerStatuses": [
            waiting("PodInitializing"), waiting("PodInitializing")],
            "containerStatuses": [waiting("PodInitializing")]},
            init_containers=[{"name": "i0"}, {"name": "i1"}]),
        "0/1", "Init:0/2", "0",
    ),
    (
        "init_first_done_second_running",
        pod({"phase": "Pending", "initContainerStatuses": [
            terminated(exitCode=0),
            running(ready=False, restarts=3, **last_terminated(seconds=10))],
            "containerStatuses": [{"state": {"waiting": {}}}]},
            init_containers=[{"name": "i0"}, {"name": "i1"}]),
        "0/1", "Init:1/2", "3 (10s ago)",
    ),
    (
        "init_crash_loop",
        pod({"phase": "Pending", "initContainerStatuses": [waiting("CrashLoopBackOff", 2)]},
            init_containers=[{"name": "i0"}]),
        "0/1", "Init:CrashLoopBackOff", "2",
    ),
    (
        "init_error",
        pod({"phase": "Pending", "initContainerStatuses": [
            terminated(reason="Error", exitCode=1)]}, init_containers=[{"name": "i0"}]),
        "0/1", "Init:Error", "0",
    ),
    (
        "init_exit_code",
        pod({"phase": "Pending", "initContainerStatuses": [terminated(exitCode=2)]},
            init_containers=[{"name": "i0"}]),
        "0/1", "Init:ExitCode:2", "0",
    ),
    (
        "running_sidecar_counts_as_a_container",
        pod({"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}],
             "initContainerStatuses": [{**running(), "started": True, "name": "proxy"}],
             "containerStatuses": [running()]},
            init_containers=[{"name": "proxy", "restartPolicy": "Always"}]),
        "2/2", "Running", "0",
    ),
    (
        "terminating",
        pod({"phase": "Running", "containerStatuses": [running()]},
            deletionTimestamp=ago(seconds=10)),
        "1/1", "Terminating", "0",
    ),
    (
        "deleted_after_completion_stays_completed",
        pod({"phase": "Succeeded", "containerStatuses": [
            terminated(reason="Completed", exitCode=0)]}, deletionTimestamp=ago(seconds=10)),
        "0/1", "Completed", "0",
    ),
    (
        "node_lost",
        pod({"phase": "Running", "reason": "NodeLost", "containerStatuses": [running()]}),
        "1/1", "NodeLost", "0",
    ),
    (
        "node_lost_while_deleting",
        pod({"phase": "Running", "reason": "NodeLost", "containerStatuses": [running()]},
            deletionTimestamp=ago(seconds=10)),
        "1/1", "Unknown", "0",
    ),
    (
        "scheduling_gated",
        pod({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
        "0/1", "SchedulingGated", "0",
    ),
]


@pytest.mark.parametrize(
    ("pod_", "ready", "status", "restarts"),
    [case[1:] for case in POD_CASES],
    ids=[case[0] for case in POD_CASES],
)
def test_pod_ready_status_and_restarts_match_kubectl(
    pod_: dict[str, Any], ready: str, status: str, restarts: str
) -> None:
    cells = cells_by_name(PODS, pod_)
    assert (cells["Ready"], cells["Status"], cells["Restarts"]) == (ready, status, restarts)
    assert cells["Name"] == "web"
    assert cells["Age"] == "5m"


def test_pod_wide_cells_show_ip_node_nomination_and_readiness_gates() -> None:
    obj = pod({
        "phase": "Running",
        "podIPs": [{"ip": "10.244.1.5"}],
        "nominatedNodeName": "node-b",
        "conditions": [{"type": "example.com/lb", "status": "True"}],
    })
    obj["spec"].update(
        nodeName="node-a",
        readinessGates=[{"conditionType": "example.com/lb"}, {"conditionType": "other"}],
    )
    cells = cells_by_name(PODS, obj)
    assert [cells["IP"], cells["Node"], cells["Nominated Node"], cells["Readiness Gates"]] == [
        "10.244.1.5", "node-a", "node-b", "1/2"]


def test_pod_wide_cells_default_to_none() -> None:
    cells = cells_by_name(PODS, pod({"phase": "Pending"}))
    assert [cells["IP"], cells["Node"], cells["Nominated Node"], cells["Readiness Gates"]] == [
        "<none>"] * 4


def test_pod_without_creation_timestamp_has_unknown_age() -> None:
    assert cells_by_name(PODS, {"metadata": {"name": "x"}})["Age"] == "<unknown>"


# --- nodes -----------------------------------------------------------------------------


def node(conditions: list[dict[str, str]], unschedulable: bool = False,
         labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "node-a", "creationTimestamp": ago(days=3), "labels": labels or {}},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": "10.0.0.2"},
                          {"type": "Hostname", "address": "node-a"}],
            "nodeInfo": {"kubeletVersion": "v1.37.0", "osImage": "Debian GNU/Linux 12",
                         "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.6.20"},
        },
    }


@pytest.mark.parametrize(
    ("conditions", "unschedulable", "expected"),
    [
        ([{"type": "Ready", "status": "True"}], False, "Ready"),
        ([{"type": "Ready", "status": "False"}], False, "NotReady"),
        ([{"type": "Ready", "status": "Unknown"}], False, "NotReady"),
        ([], False, "Unknown"),
        ([{"type": "Ready", "status": "True"}], True, "Ready,SchedulingDisabled"),
        ([{"type": "MemoryPressure", "status": "False"}], True, "Unknown,SchedulingDisabled"),
    ],
)
def test_node_status(conditions: list[dict[str, str]], unschedulable: bool, expected: str) -> None:
    assert cells_by_name(NODES, node(conditions, unschedulable))["Status"] == expected


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, "<none>"),
        ({"node-role.kubernetes.io/control-plane": ""}, "control-plane"),
        ({"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": "",
          "kubernetes.io/hostname": "node-a"}, "control-plane,worker"),
        ({"kubernetes.io/role": "infra"}, "infra"),
        ({"node-role.kubernetes.io/": "x"}, "<none>"),
    ],
)
def test_node_roles_come_from_role_labels(labels: dict[str, str], expected: str) -> None:
    assert cells_by_name(NODES, node([], labels=labels))["Roles"] == expected


def test_node_row_has_version_age_and_wide_system_info() -> None:
    cells = table_row_cells(NODES, node([{"type": "Ready", "status": "True"}]), NOW)
    assert cells == ["node-a", "Ready", "<none>", "3d", "v1.37.0", "10.0.0.2", "<none>",
                     "Debian GNU/Linux 12", "6.1.0", "containerd://1.6.20"]


# --- services --------------------------------------------------------------------------


def service(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "web", "creationTimestamp": ago(hours=2)},
            "spec": spec, "status": status or {}}


@pytest.mark.parametrize(
    ("svc", "expected"),
    [
        (service({"type": "ClusterIP", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"},
                  "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}),
         ["web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP,53/UDP", "120m", "app=web"]),
        (service({"type": "NodePort", "clusterIPs": ["10.96.0.11"],
                  "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}),
         ["web", "NodePort", "10.96.0.11", "<none>", "80:30080/TCP", "120m", "<none>"]),
        (service({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"]}),
         ["web", "ClusterIP", "None", "<none>", "<none>", "120m", "<none>"]),
        (service({"type": "ClusterIP", "clusterIPs": ["10.96.0.12"],
                  "externalIPs": ["192.0.2.1", "192.0.2.2"], "ports": [{"port": 80}]}),
         ["web", "ClusterIP", "10.96.0.12", "192.0.2.1,192.0.2.2", "80/TCP", "120m", "<none>"]),
        (service({"type": "LoadBalancer", "clusterIPs": ["10.96.0.13"],
                  "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}),
         ["web", "LoadBalancer", "10.96.0.13", "<pending>", "443:31443/TCP", "120m", "<none>"]),
        (service({"type": "LoadBalancer", "clusterIPs": ["10.96.0.14"],
                  "externalIPs": ["1.2.3.4"]},
                 {"loadBalancer": {"ingress": [{"ip": "203.0.113.9"},
                                               {"hostname": "lb.example"}]}}),
         ["web", "LoadBalancer", "10.96.0.14", "203.0.113.9,lb.example,1.2.3.4", "<none>", "120m",
          "<none>"]),
        (service({"type": "ExternalName", "externalName": "db.example.com"}),
         ["web", "ExternalName", "<none>", "db.example.com", "<none>", "120m", "<none>"]),
    ],
)
def test_service_columns(svc: dict[str, Any], expected: list[Any]) -> None:
    assert table_row_cells(SERVICES, svc, NOW) == expected


def test_resource_quota_prints_used_over_hard_with_limits_apart() -> None:
    quota = {
        "metadata": {"name": "compute", "creationTimestamp": ago(minutes=5)},
        "status": {"hard": {"pods": "10", "requests.cpu": "2", "limits.memory": "2Gi",
                            "requests.memory": "1024Mi", "count/deployments.apps": "3"},
                   "used": {"pods": "1", "requests.cpu": "0.5", "limits.memory": "256Mi",
                            "requests.memory": "128Mi"}},
    }
    assert table_row_cells(lookup("", "v1", "resourcequotas"), quota, NOW) == [
        "compute",
        "count/deployments.apps: 0/3, pods: 1/10, requests.cpu: 500m/2, "
        "requests.memory: 128Mi/1Gi",
        "limits.memory: 256Mi/2Gi",
        "5m",
    ]


# --- workloads -------------------------------------------------------------------------


def test_deployment_ready_is_ready_over_desired() -> None:
    deployment = {
        "metadata": {"name": "web", "creationTimestamp": ago(days=1, hours=2)},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"},
                         "matchExpressions": [{"key": "tier", "operator": "In",
                                               "values": ["front", "edge"]}]},
            "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"},
                                                 {"name": "log", "image": "busybox"}]}},
        },
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    }
    assert table_row_cells(DEPLOYMENTS, deployment, NOW) == [
        "web", "2/3", 3, 2, "26h", "nginx,log", "nginx:1.27,busybox",
        "app=web,tier in (edge,front)",
    ]


@pytest.mark.parametrize(
    ("spec", "status", "metadata", "expected"),
    [
        ({"completions": 1}, {"succeeded": 1, "startTime": ago(minutes=10),
                              "completionTime": ago(minutes=9, seconds=30),
                              "conditions": [{"type": "Complete", "status": "True"}]},
         {}, ["Complete", "1/1", "30s"]),
        ({"parallelism": 3}, {"startTime": ago(minutes=3)}, {}, ["Running", "0/1 of 3", "3m"]),
        ({"completions": 5}, {"succeeded": 2, "startTime": ago(hours=1),
                              "conditions": [{"type": "Failed", "status": "True"}]},
         {}, ["Failed", "2/5", "60m"]),
        ({"completions": 1, "suspend": True},
         {"conditions": [{"type": "Suspended", "status": "True"}]}, {}, ["Suspended", "0/1", ""]),
        ({"completions": 1}, {"startTime": ago(seconds=5)}, {"deletionTimestamp": ago(seconds=1)},
         ["Terminating", "0/1", "5s"]),
    ],
)
def test_job_status_completions_and_duration(
    spec: dict[str, Any], status: dict[str, Any], metadata: dict[str, Any], expected: list[str]
) -> None:
    job = {"metadata": {"name": "pi", **metadata}, "spec": spec, "status": status}
    cells = cells_by_name(JOBS, job)
    assert [cells["Status"], cells["Completions"], cells["Duration"]] == expected
    assert cells["Selector"] == "<none>"


# --- events ----------------------------------------------------------------------------


def test_core_event_prints_last_seen_object_and_message() -> None:
    event = {
        "metadata": {"name": "web.17a", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{nginx}"},
        "reason": "Pulled", "message": "Container image pulled\n", "type": "Normal",
        "source": {"component": "kubelet", "host": "node-a"},
        "firstTimestamp": ago(minutes=10), "lastTimestamp": ago(seconds=30), "count": 4,
    }
    assert table_row_cells(EVENTS, event, NOW) == [
        "30s", "Normal", "Pulled", "pod/web", "spec.containers{nginx}", "kubelet, node-a",
        "Container image pulled", "10m", 4, "web.17a",
    ]


def test_events_k8s_io_event_prints_like_the_core_one() -> None:
    event = {
        "metadata": {"name": "web.17b"},
        "regarding": {"kind": "Deployment", "name": "web"},
        "reason": "ScalingReplicaSet", "note": "Scaled up", "type": "Normal",
        "eventTime": "2026-11-21T11:58:00.000000Z",
        "reportingController": "deployment-controller", "reportingInstance": "",
    }
    assert table_row_cells(EVENTS_V1, event, NOW) == [
        "2m", "Normal", "ScalingReplicaSet", "deployment/web", "", "deployment-controller",
        "Scaled up", "2m", 1, "web.17b",
    ]


def test_event_series_sets_last_seen_and_count() -> None:
    event = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"},
             "eventTime": ago(hours=1), "series": {"count": 7, "lastObservedTime": ago(seconds=3)}}
    cells = cells_by_name(EVENTS, event)
    assert [cells["Last Seen"], cells["Object"], cells["First Seen"], cells["Count"]] == [
        "3s", "node", "60m", 7]


# --- column definitions and the Table --------------------------------------------------


def test_every_resource_has_columns_and_a_matching_row() -> None:
    minimal = {"metadata": {"name": "x", "creationTimestamp": ago(minutes=1)}}
    for resource in RESOURCES:
        columns = column_definitions(resource)
        names = [column["name"] for column in columns]
        assert "Name" in names, resource.plural
        name_column = columns[names.index("Name")]
        assert name_column["format"] == "name"
        if resource.kind != "Event":  # upstream puts Name last (and wide) for events
            assert names[0] == "Name", resource.plural
        assert all(set(column) == {"name", "type", "format", "description", "priority"}
                   for column in columns)
        assert len(table_row_cells(resource, minimal, NOW)) == len(columns), resource.plural


@pytest.mark.parametrize(
    ("resource", "wide"),
    [
        (PODS, ["IP", "Node", "Nominated Node", "Readiness Gates"]),
        (NODES, ["Internal-IP", "External-IP", "OS-Image", "Kernel-Version",
                 "Container-Runtime"]),
        (SERVICES, ["Selector"]),
        (DEPLOYMENTS, ["Containers", "Images", "Selector"]),
        (EVENTS, ["Subobject", "Source", "First Seen", "Count", "Name"]),
        (lookup("rbac.authorization.k8s.io", "v1", "rolebindings"),
         ["Users", "Groups", "ServiceAccounts"]),
    ],
)
def test_wide_columns_carry_priority_one(resource: Any, wide: list[str]) -> None:
    columns = column_definitions(resource)
    assert [column["name"] for column in columns if column["priority"] == 1] == wide


@pytest.mark.parametrize(
    ("plural", "group", "expected"),
    [
        ("pods", "", ["Name", "Ready", "Status", "Restarts", "Age"]),
        ("namespaces", "", ["Name", "Status", "Age"]),
        ("services", "", ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"]),
        ("deployments", "apps", ["Name", "Ready", "Up-to-date", "Available", "Age"]),
        ("replicasets", "apps", ["Name", "Desired", "Current", "Ready", "Age"]),
        ("statefulsets", "apps", ["Name", "Ready", "Age"]),
        ("daemonsets", "apps", ["Name", "Desired", "Current", "Ready", "Up-to-date", "Available",
                                "Node Selector", "Age"]),
        ("jobs", "batch", ["Name", "Status", "Completions", "Duration", "Age"]),
        ("cronjobs", "batch", ["Name", "Schedule", "Timezone", "Suspend", "Active",
                               "Last Schedule", "Age"]),
        ("events", "", ["Last Seen", "Type", "Reason", "Object", "Message"]),
        ("secrets", "", ["Name", "Type", "Data", "Age"]),
        ("leases", "coordination.k8s.io", ["Name", "Holder", "Age"]),
        ("priorityclasses", "scheduling.k8s.io",
         ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]),
        ("poddisruptionbudgets", "policy",
         ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"]),
        ("rolebindings", "rbac.authorization.k8s.io", ["Name", "Role", "Age"]),
        ("mutatingwebhookconfigurations", "admissionregistration.k8s.io",
         ["Name", "Webhooks", "Age"]),
        ("validatingwebhookconfigurations", "admissionregistration.k8s.io",
         ["Name", "Webhooks", "Age"]),
        ("certificatesigningrequests", "certificates.k8s.io",
         ["Name", "Age", "SignerName", "Requestor", "RequestedDuration", "Condition"]),
        ("limitranges", "", ["Name", "Created At"]),
        ("roles", "rbac.authorization.k8s.io", ["Name", "Created At"]),
        ("bindings", "", ["Name", "Created At"]),
    ],
)
def test_default_columns_are_upstreams(plural: str, group: str, expected: list[str]) -> None:
    resource = next(r for r in RESOURCES if (r.group, r.plural) == (group, plural))
    columns = column_definitions(resource)
    assert [column["name"] for column in columns if column["priority"] == 0] == expected


def test_resource_without_printer_gets_name_and_created_at() -> None:
    role = {"metadata": {"name": "reader", "creationTimestamp": "2026-11-21T10:00:00Z"}}
    columns = column_definitions(ROLES)
    assert [(column["name"], column["type"]) for column in columns] == [
        ("Name", "string"), ("Created At", "date")]
    assert table_row_cells(ROLES, role, NOW) == ["reader", "2026-11-21T10:00:00Z"]


def test_role_binding_wide_cells_list_subjects_by_kind() -> None:
    binding = {
        "metadata": {"name": "readers", "creationTimestamp": ago(seconds=40)},
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
                     {"kind": "ServiceAccount", "name": "ci", "namespace": "tools"},
                     {"kind": "User", "name": "bob"}],
    }
    resource = lookup("rbac.authorization.k8s.io", "v1", "rolebindings")
    assert table_row_cells(resource, binding, NOW) == [
        "readers", "ClusterRole/view", "40s", "alice, bob", "devs", "tools/ci"]


CSRS = lookup("certificates.k8s.io", "v1", "certificatesigningrequests")


def csr(expiration: int | None = None, *types: str, certificate: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"signerName": "example.com/signer", "username": "alice"}
    if expiration is not None:
        spec["expirationSeconds"] = expiration
    status: dict[str, Any] = {"conditions": [{"type": t, "status": "True"} for t in types]}
    if certificate:
        status["certificate"] = certificate
    return {"metadata": {"name": "req", "creationTimestamp": ago(minutes=3)}, "spec": spec,
            "status": status}


@pytest.mark.parametrize(("obj", "duration", "condition"), [
    (csr(), "<none>", "Pending"),
    (csr(600, "Approved"), "10m", "Approved"),
    (csr(86400, "Approved", certificate="Q0VSVA=="), "24h", "Approved,Issued"),
    (csr(None, "Approved", "Failed"), "<none>", "Approved,Failed"),
    (csr(None, "Denied"), "<none>", "Denied"),
    (csr(None, "Approved", "Denied"), "<none>", "Denied"),  # denied outranks approved
])
def test_csr_cells_show_signer_requestor_duration_and_condition(
        obj: dict[str, Any], duration: str, condition: str) -> None:
    assert table_row_cells(CSRS, obj, NOW) == [
        "req", "3m", "example.com/signer", "alice", duration, condition]


def test_a_csr_without_a_signer_shows_none() -> None:
    obj = {"metadata": {"name": "old", "creationTimestamp": ago(minutes=3)}, "spec": {}}
    assert cells_by_name(CSRS, obj)["SignerName"] == "<none>"


def test_webhook_configuration_cells_count_its_webhooks() -> None:
    configuration = {"metadata": {"name": "policy", "creationTimestamp": ago(seconds=40)},
                     "webhooks": [{"name": "a.example.com"}, {"name": "b.example.com"}]}
    resource = lookup("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")
    assert table_row_cells(resource, configuration, NOW) == ["policy", 2, "40s"]
    empty = {"metadata": {"name": "none", "creationTimestamp": ago(seconds=40)}}
    assert table_row_cells(resource, empty, NOW) == ["none", 0, "40s"]


@pytest.mark.parametrize(
    ("include_object", "expected_object"),
    [
        ("None", None),
        ("Metadata", {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                      "metadata": {"name": "web", "creationTimestamp": "2026-11-21T11:00:00Z"}}),
    ],
)
def test_to_table_row_object_follows_include_object(
    include_object: str, expected_object: dict[str, Any] | None
) -> None:
    obj = {"kind": "Pod", "apiVersion": "v1",
           "metadata": {"name": "web", "creationTimestamp": "2026-11-21T11:00:00Z"},
           "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending"}}
    table = to_table(PODS, [obj], now=NOW, include_object=include_object)
    assert table["rows"] == [{"cells": ["web", "0/1", "Pending", "0", "60m", "<none>", "<none>",
                                        "<none>", "<none>"], "object": expected_object}]


def test_to_table_with_full_objects_and_list_metadata() -> None:
    objs = [{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": name},
             "spec": {"containers": []}, "status": {}} for name in ("a", "b")]
    table = to_table(PODS, objs, now=NOW, include_object="Object",
                     list_metadata={"resourceVersion": "42"})
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "42"}
    assert table["columnDefinitions"] == column_definitions(PODS)
    assert [row["object"] for row in table["rows"]] == objs
    assert to_table(PODS, [], now=NOW)["metadata"] == {}


def test_finished_pod_rows_carry_the_completed_condition() -> None:
    done = pod({"phase": "Succeeded"})
    table = to_table(PODS, [done, pod({"phase": "Running"})], now=NOW)
    assert table["rows"][0]["conditions"] == [{
        "type": "Completed", "status": "True", "reason": "Succeeded",
        "message": "The pod has completed successfully."}]
    assert "conditions" not in table["rows"][1]
