"""The eviction manager: hard thresholds, pod ranking, messages, pressure and admission."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest

from minikube_py.api import Obj
from minikube_py.cri import CRIError
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.eviction import (
    EvictionManager,
    Observation,
    Observations,
    Threshold,
    container_ephemeral_storage_limit_message,
    eviction_message,
    local_storage_limit_message,
    observe_host,
    parse_thresholds,
    pod_ephemeral_storage_limit_message,
    pod_request,
    rank_for_eviction,
    thresholds_met,
)
from minikube_py.kubelet.kubelet import live_containers
from minikube_py.kubelet.resources import SYSTEM_CRITICAL_PRIORITY

MI = 1024 * 1024
GI = 1024 * MI


def pod(name: str, *, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
        priority: int | None = None, annotations: dict[str, str] | None = None,
        tolerations: list[Obj] | None = None) -> Obj:
    resources: Obj = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    spec: Obj = {"containers": [{"name": "c", "image": "busybox", "resources": resources}]}
    if priority is not None:
        spec["priority"] = priority
    if tolerations:
        spec["tolerations"] = tolerations
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "annotations": annotations or {}},
            "spec": spec}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 22, 4, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Node:
    """What an EvictionManager talks to: observations, pods, usage, and the evictions."""

    def __init__(self, memory_available: int = 4 * GI) -> None:
        self.memory_available = memory_available
        self.pods: list[Obj] = []
        self.usage: dict[str, Obj] = {}
        self.evicted: list[tuple[str, str]] = []
        self.volumes: dict[str, dict[str, int]] = {}  # pod name -> emptyDir name -> bytes

    async def observe(self) -> Observations:
        return {"memory.available": Observation(self.memory_available, 8 * GI),
                "nodefs.available": Observation(50 * GI, 100 * GI)}

    def active_pods(self) -> list[Obj]:
        return list(self.pods)

    async def pod_usage(self, uid: str) -> Obj | None:
        if uid not in self.usage:
            raise CRIError(grpc.StatusCode.NOT_FOUND, f"no stats for {uid}")
        return self.usage[uid]

    async def evict(self, evicted: Obj, message: str) -> None:
        self.evicted.append((evicted["metadata"]["name"], message))

    async def volume_usage(self, pod: Obj) -> dict[str, int]:
        return self.volumes.get(pod["metadata"]["name"], {})

    def manager(self, thresholds: str = "memory.available<100Mi,nodefs.available<10%",
                clock: Clock | None = None) -> EvictionManager:
        return EvictionManager(parse_thresholds(thresholds), observe=self.observe,
                               active_pods=self.active_pods, pod_usage=self.pod_usage,
                               evict=self.evict, volume_usage=self.volume_usage,
                               clock=clock or Clock())


# -- thresholds ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("memory.available<100Mi,nodefs.available<10%",
     [("memory.available", "100Mi", None), ("nodefs.available", None, 0.1)]),
    ("memory.available<1Gi", [("memory.available", "1Gi", None)]),
    (" nodefs.inodesFree<5% , imagefs.available<15%",
     [("nodefs.inodesFree", None, 0.05), ("imagefs.available", None, 0.15)]),
    ("", []),
    ("nodefs.available<0%", []),
    ("nodefs.available<100%", []),
])
def test_parse_thresholds_reads_quantities_and_percentages(
        text: str, expected: list[tuple[str, str | None, float | None]]) -> None:
    thresholds = parse_thresholds(text)
    assert [(t.signal, t.quantity) for t in thresholds] == [(s, q) for s, q, _ in expected]
    for threshold, (_, _, percentage) in zip(thresholds, expected, strict=True):
        assert threshold.percentage == pytest.approx(percentage or 0.0)


@pytest.mark.parametrize(("text", "message"), [
    ("foo.available<1Gi", "unsupported eviction signal foo.available"),
    ("memory.available=1Gi", "malformed pair, expect string<string"),
    ("memory.available<1Gi<2Gi", "malformed pair, expect string<string"),
    ("memory.available<0", "eviction threshold memory.available must be positive: 0"),
    ("nodefs.available<-5%", "eviction percentage threshold nodefs.available must be >= 0%: -5%"),
    ("nodefs.available<150%",
     "eviction percentage threshold nodefs.available must be <= 100%: 150%"),
    ("memory.available<lots", "quantities must match"),
])
def test_parse_thresholds_rejects_bad_statements_with_upstream_messages(
        text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("+", r"\+")):
        parse_thresholds(text)


def test_percentage_threshold_is_a_share_of_capacity_in_float32_like_upstream() -> None:
    threshold = parse_thresholds("nodefs.available<10%")[0]
    assert threshold.value(1_000_000) == 100_000
    # float32(0.1) is 0.10000000149..., so large disks get a few bytes more, as upstream.
    assert threshold.value(270_553_174_016) == 27_055_317_804
    assert threshold.text(100 * GI) == "10737418400"  # not quite 10Gi


def test_thresholds_met_compares_available_against_the_threshold() -> None:
    thresholds = parse_thresholds("memory.available<100Mi,nodefs.available<10%")
    observations = {"memory.available": Observation(99 * MI, 8 * GI),
                    "nodefs.available": Observation(11 * GI, 100 * GI)}
    assert [t.signal for t in thresholds_met(thresholds, observations)] == ["memory.available"]
    observations["memory.available"] = Observation(100 * MI, 8 * GI)
    assert thresholds_met(thresholds, observations) == []


def test_thresholds_of_unobserved_signals_are_ignored() -> None:
    thresholds = parse_thresholds("imagefs.available<15%")
    assert thresholds_met(thresholds, {"nodefs.available": Observation(0, GI)}) == []


# -- ranking ------------------------------------------------------------------------------


def test_memory_ranking_puts_pods_over_requests_first_then_low_priority_then_big_excess(
        ) -> None:
    pods = [
        pod("under-requests", requests={"memory": "500Mi"}),
        pod("high-priority", requests={"memory": "100Mi"}, priority=1000),
        pod("small-excess", requests={"memory": "100Mi"}),
        pod("best-effort"),
        pod("no-stats"),
    ]
    usages: list[Obj | None] = [
        {"memory": 300 * MI},
        {"memory": 150 * MI},
        {"memory": 110 * MI},
        {"memory": 200 * MI},
        None,
    ]
    ranked = rank_for_eviction(pods, usages, "memory")
    assert [p["metadata"]["name"] for p in ranked] == [
        "no-stats", "best-effort", "small-excess", "high-priority", "under-requests"]


def test_disk_ranking_uses_ephemeral_storage_usage_and_requests() -> None:
    pods = [pod("within", requests={"ephemeral-storage": "1Gi"}), pod("over"), pod("bigger")]
    usages: list[Obj | None] = [
        {"ephemeral-storage": GI // 2},
        {"containers": {"c": {"ephemeral-storage": 10 * MI}}},
        {"containers": {"c": {"ephemeral-storage": 20 * MI}}},
    ]
    ranked = rank_for_eviction(pods, usages, "ephemeral-storage")
    assert [p["metadata"]["name"] for p in ranked] == ["bigger", "over", "within"]


def test_pid_ranking_is_by_priority_then_process_count() -> None:
    pods = [pod("few"), pod("many"), pod("important", priority=10)]
    usages: list[Obj | None] = [{"pids": 3}, {"pids": 300}, {"pids": 3000}]
    ranked = rank_for_eviction(pods, usages, "pids")
    assert [p["metadata"]["name"] for p in ranked] == ["many", "few", "important"]


def test_pod_request_is_the_larger_of_the_containers_sum_and_the_biggest_init_container(
        ) -> None:
    spec_pod = pod("p", requests={"memory": "100Mi"})
    spec_pod["spec"]["containers"].append(
        {"name": "d", "resources": {"requests": {"memory": "100Mi"}}})
    assert pod_request(spec_pod, "memory") == 200 * MI
    spec_pod["spec"]["initContainers"] = [
        {"name": "init", "resources": {"requests": {"memory": "300Mi"}}}]
    assert pod_request(spec_pod, "memory") == 300 * MI
    assert pod_request(spec_pod, "cpu") == 0


# -- messages -----------------------------------------------------------------------------


def test_eviction_message_names_the_threshold_and_the_container_over_its_request() -> None:
    met = [Threshold("memory.available", quantity="100Mi")]
    observations = {"memory.available": Observation(50 * MI, 8 * GI)}
    usage = {"containers": {"c": {"memory": 200 * MI}}}
    assert eviction_message("memory", pod("p"), usage, met, observations) == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
        "Container c was using 200Mi, request is 0, has larger consumption of memory. ")


def test_eviction_message_leaves_out_containers_within_their_requests() -> None:
    met = parse_thresholds("nodefs.available<10%")
    observations = {"nodefs.available": Observation(5 * GI, 100 * GI)}
    usage = {"containers": {"c": {"ephemeral-storage": MI}}}
    within = pod("p", requests={"ephemeral-storage": "1Gi"})
    assert eviction_message("ephemeral-storage", within, usage, met, observations) == (
        "The node was low on resource: ephemeral-storage. "
        "Threshold quantity: 10737418400, available: 5Gi. ")


# -- synchronize --------------------------------------------------------------------------


async def test_synchronize_evicts_nothing_while_no_threshold_is_met() -> None:
    node = Node()
    node.pods = [pod("a")]
    manager = node.manager()
    assert await manager.synchronize() is None
    assert node.evicted == []
    assert manager.pressure() == {"MemoryPressure": False, "DiskPressure": False,
                                  "PIDPressure": False}


async def test_synchronize_evicts_one_pod_the_first_of_the_ranking() -> None:
    node = Node(memory_available=50 * MI)
    node.pods = [pod("guaranteed", requests={"memory": "1Gi"}, limits={"memory": "1Gi"}),
                 pod("hungry")]
    node.usage = {"uid-guaranteed": {"memory": 512 * MI},
                  "uid-hungry": {"memory": 200 * MI, "containers": {"c": {"memory": 200 * MI}}}}
    manager = node.manager()
    evicted = await manager.synchronize()
    assert evicted is not None and evicted["metadata"]["name"] == "hungry"
    assert node.evicted == [("hungry",
                             "The node was low on resource: memory. Threshold quantity: 100Mi, "
                             "available: 50Mi. Container c was using 200Mi, request is 0, has "
                             "larger consumption of memory. ")]
    assert manager.pressure()["MemoryPressure"] is True


async def test_synchronize_never_evicts_critical_pods() -> None:
    node = Node(memory_available=50 * MI)
    node.pods = [pod("static", annotations={"kubernetes.io/config.source": "file"}),
                 pod("system", priority=2_000_001_000),
                 pod("ordinary", requests={"memory": "1Gi"})]
    node.usage = {f"uid-{p['metadata']['name']}": {"memory": GI * 2} for p in node.pods}
    evicted = await node.manager().synchronize()
    assert evicted is not None and evicted["metadata"]["name"] == "ordinary"


async def test_synchronize_reclaims_memory_before_disk() -> None:
    node = Node(memory_available=50 * MI)
    node.pods = [pod("a")]
    node.usage = {"uid-a": {"memory": MI, "ephemeral-storage": MI}}
    await node.manager("nodefs.available<60%,memory.available<100Mi").synchronize()
    assert node.evicted[0][1].startswith("The node was low on resource: memory. ")


async def test_pods_without_stats_are_evicted_first() -> None:
    node = Node(memory_available=50 * MI)
    node.pods = [pod("measured"), pod("unmeasured")]
    node.usage = {"uid-measured": {"memory": GI}}
    evicted = await node.manager().synchronize()
    assert evicted is not None and evicted["metadata"]["name"] == "unmeasured"
    assert node.evicted[0][1] == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ")


async def test_pressure_clears_only_after_the_transition_period() -> None:
    clock = Clock()
    node = Node(memory_available=50 * MI)
    manager = node.manager(clock=clock)
    await manager.synchronize()
    assert manager.pressure()["MemoryPressure"] is True
    node.memory_available = 4 * GI
    clock.advance(299)
    await manager.synchronize()
    assert manager.pressure()["MemoryPressure"] is True
    clock.advance(1)
    await manager.synchronize()
    assert manager.pressure()["MemoryPressure"] is False


async def test_pressure_transition_period_is_configurable() -> None:
    clock = Clock()
    node = Node(memory_available=50 * MI)
    manager = EvictionManager(parse_thresholds("memory.available<100Mi"), observe=node.observe,
                              active_pods=node.active_pods, pod_usage=node.pod_usage,
                              evict=node.evict, clock=clock, pressure_transition_period=30)
    await manager.synchronize()
    node.memory_available = 4 * GI
    clock.advance(30)
    await manager.synchronize()
    assert manager.pressure()["MemoryPressure"] is False


# -- admission ----------------------------------------------------------------------------


MEMORY_PRESSURE_TOLERATION = {"key": "node.kubernetes.io/memory-pressure",
                              "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(("conditions", "candidate", "expected"), [
    ([], pod("best-effort"), None),
    (["MemoryPressure"], pod("best-effort"), "The node had condition: [MemoryPressure]. "),
    (["MemoryPressure"], pod("burstable", requests={"memory": "10Mi"}), None),
    (["MemoryPressure"], pod("tolerant", tolerations=[MEMORY_PRESSURE_TOLERATION]), None),
    (["MemoryPressure"], pod("critical", priority=2_000_000_000), None),
    (["DiskPressure"], pod("burstable", requests={"memory": "10Mi"}),
     "The node had condition: [DiskPressure]. "),
    (["MemoryPressure", "DiskPressure"], pod("tolerant", tolerations=[MEMORY_PRESSURE_TOLERATION]),
     "The node had condition: [MemoryPressure DiskPressure]. "),
])
def test_admit_rejects_best_effort_pods_under_memory_pressure_and_all_under_disk_pressure(
        conditions: list[str], candidate: Obj, expected: str | None) -> None:
    manager = Node().manager()
    manager.node_conditions = conditions
    assert manager.admit(candidate) == expected


# -- the host -----------------------------------------------------------------------------


async def test_observe_host_reports_memory_disk_inodes_and_pids(tmp_path: Path) -> None:
    observations = await observe_host(tmp_path / "not-yet-created")
    for signal in ("memory.available", "nodefs.available", "nodefs.inodesFree",
                   "pid.available"):
        observed = observations[signal]
        assert 0 <= observed.available <= observed.capacity, signal
    assert observations["memory.available"].capacity > 64 * MI


def with_empty_dirs(obj: Obj, **limits: str | None) -> Obj:
    obj["spec"]["volumes"] = [{"name": name, "emptyDir": {} if limit is None else
                               {"sizeLimit": limit}} for name, limit in limits.items()]
    return obj


async def test_every_pod_whose_empty_dir_outgrew_its_size_limit_is_evicted() -> None:
    node = Node()
    node.pods = [with_empty_dirs(pod("over"), cache="1Mi", scratch="1Gi"),
                 with_empty_dirs(pod("at-limit"), cache="1Mi"),
                 with_empty_dirs(pod("no-limit"), cache=None),
                 with_empty_dirs(pod("also-over", priority=10), data="1024Ki"),
                 with_empty_dirs(pod("critical", priority=SYSTEM_CRITICAL_PRIORITY),
                                 data="1Mi")]
    node.volumes = {"over": {"cache": MI + 1, "scratch": 0}, "at-limit": {"cache": MI},
                    "no-limit": {"cache": 100 * GI}, "also-over": {"data": 2 * MI},
                    "critical": {"data": 2 * MI}}
    evicted = await node.manager().synchronize()
    assert evicted is not None and evicted["metadata"]["name"] == "over"
    assert node.evicted == [
        ("over", 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". '),
        ("also-over", 'Usage of EmptyDir volume "data" exceeds the limit "1Mi". ')]


async def test_an_empty_dir_eviction_is_the_passs_reclaim() -> None:
    node = Node(memory_available=50 * MI)
    node.pods = [with_empty_dirs(pod("over"), cache="1Mi"), pod("hungry")]
    node.usage = {"uid-over": {"memory": MI}, "uid-hungry": {"memory": 2 * GI}}
    node.volumes = {"over": {"cache": 2 * MI}}
    manager = node.manager()
    await manager.synchronize()
    assert [name for name, _ in node.evicted] == ["over"]
    assert manager.pressure()["MemoryPressure"]


# -- ephemeral-storage limits -------------------------------------------------------------


def containers(obj: Obj, **limits: str | None) -> Obj:
    """The pod's containers replaced by one per name, with that ephemeral-storage limit."""
    obj["spec"]["containers"] = [
        {"name": name, "image": "busybox",
         "resources": {} if limit is None else {"limits": {"ephemeral-storage": limit}}}
        for name, limit in limits.items()]
    return obj


def stats(**used: int) -> Obj:
    return {"containers": {name: {"ephemeral-storage": amount}
                           for name, amount in used.items()}}


def test_a_container_over_its_own_limit_is_named_in_the_message() -> None:
    two = containers(pod("p"), app="10Mi", idle="100Mi")
    assert local_storage_limit_message(two, {}, stats(app=20 * MI, idle=0)) == (
        'Container app exceeded its local ephemeral storage limit "10Mi". ')
    assert local_storage_limit_message(two, {}, stats(app=10 * MI, idle=0)) is None


def test_a_container_limit_of_zero_or_none_is_no_container_limit() -> None:
    obj = containers(pod("p"), zero="0", unlimited=None, app="1Gi")
    assert container_ephemeral_storage_limit_message(
        obj, stats(zero=GI, unlimited=GI, app=MI)) is None


def test_the_pod_over_its_containers_limits_sum_is_evicted_before_any_container_check(
        ) -> None:
    two = containers(pod("p"), app="10Mi", idle="10Mi")
    assert local_storage_limit_message(two, {}, stats(app=21 * MI, idle=0)) == (
        "Pod ephemeral local storage usage exceeds the total limit of containers 20Mi. ")
    assert local_storage_limit_message(two, {}, stats(app=20 * MI, idle=0)) == (
        'Container app exceeded its local ephemeral storage limit "10Mi". ')


def test_the_pod_total_counts_empty_dirs_on_disk_and_config_maps_but_not_memory() -> None:
    obj = with_empty_dirs(containers(pod("p"), app="10Mi", side="10Mi"), disk=None, ram=None)
    obj["spec"]["volumes"][1]["emptyDir"]["medium"] = "Memory"
    obj["spec"]["volumes"].append({"name": "conf", "configMap": {"name": "settings"}})
    usage = stats(app=8 * MI, side=8 * MI)
    over = "Pod ephemeral local storage usage exceeds the total limit of containers 20Mi. "
    assert local_storage_limit_message(obj, {"disk": 5 * MI, "ram": 0, "conf": 0},
                                       usage) == over
    assert local_storage_limit_message(obj, {"disk": 0, "ram": 0, "conf": 5 * MI},
                                       usage) == over
    assert local_storage_limit_message(obj, {"disk": 0, "ram": 5 * MI, "conf": 0},
                                       usage) is None


def test_the_pod_limit_is_at_least_an_init_containers_and_prints_as_upstream_sums(
        ) -> None:
    obj = containers(pod("p"), app="10Mi")
    obj["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "resources": {
        "limits": {"ephemeral-storage": "50Mi"}}}]
    assert pod_ephemeral_storage_limit_message(obj, {}, stats(app=30 * MI)) is None
    assert local_storage_limit_message(obj, {}, stats(app=30 * MI)) == (
        'Container app exceeded its local ephemeral storage limit "10Mi". ')
    mixed = containers(pod("p"), app="10Mi", side="100M")
    assert pod_ephemeral_storage_limit_message(mixed, {}, stats(app=GI)) == (
        "Pod ephemeral local storage usage exceeds the total limit of containers "
        "110485760. ")


def test_a_pod_without_ephemeral_storage_limits_is_never_over_them() -> None:
    obj = with_empty_dirs(containers(pod("p"), app=None), scratch=None)
    assert local_storage_limit_message(obj, {"scratch": 100 * GI}, stats(app=100 * GI)) is None


def test_without_container_stats_only_the_empty_dirs_are_checked() -> None:
    obj = with_empty_dirs(containers(pod("p"), app="1Mi"), cache="1Mi")
    assert local_storage_limit_message(obj, {"cache": 0}, None) is None
    assert local_storage_limit_message(obj, {"cache": 2 * MI}, stats(app=GI)) == (
        'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". ')


async def test_every_pod_over_its_ephemeral_storage_limits_is_evicted() -> None:
    node = Node()
    node.pods = [containers(pod("container-over"), app="10Mi", idle="100Mi"),
                 containers(pod("pod-over"), app="10Mi"),
                 containers(pod("within"), app="10Mi"),
                 containers(pod("no-stats"), app="10Mi"),
                 containers(pod("critical", priority=SYSTEM_CRITICAL_PRIORITY), app="1Mi")]
    node.usage = {"uid-container-over": stats(app=20 * MI, idle=MI),
                  "uid-pod-over": stats(app=20 * MI), "uid-within": stats(app=10 * MI),
                  "uid-critical": stats(app=GI)}
    evicted = await node.manager().synchronize()
    assert evicted is not None and evicted["metadata"]["name"] == "container-over"
    assert node.evicted == [
        ("container-over", 'Container app exceeded its local ephemeral storage limit "10Mi". '),
        ("pod-over",
         "Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. ")]


def test_live_containers_are_the_running_instances_else_the_newest() -> None:
    def instance(name: str, created: int, state: int = api_pb2.CONTAINER_EXITED
                 ) -> api_pb2.Container:
        return api_pb2.Container(id=f"{name}-{created}", created_at=created, state=state,
                                 metadata=api_pb2.ContainerMetadata(name=name))

    listed = [instance("app", 3), instance("app", 1), instance("app", 2,
                                                                api_pb2.CONTAINER_RUNNING),
              instance("done", 5), instance("done", 9), instance("done", 7)]
    assert sorted(c.id for c in live_containers(listed)) == ["app-2", "done-9"]
