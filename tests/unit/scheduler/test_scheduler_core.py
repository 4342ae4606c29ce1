"""The scheduler's core on plain data: queue order and moves, the cache's assumed pods,
configuration errors, the FitError message and host selection."""

from __future__ import annotations

import asyncio
import time

import pytest

from minikube_py.api import Obj
from minikube_py.scheduler.cache import Cache
from minikube_py.scheduler.config import ConfigError, default_configuration, parse_configuration
from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    QueuedPodInfo,
    Status,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.queue import SchedulingQueue
from minikube_py.scheduler.scheduler import (
    FitError,
    SchedulingError,
    node_update_actions,
    num_feasible_nodes_to_find,
    select_host,
)
from tests.unit.scheduler.test_equivalence_cache import scheduler_with


def pod(name: str, priority: int = 0, cpu: str = "", node: str = "", uid: str = "") -> dict:
    container: dict = {"name": "c", "image": "i"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec: dict = {"containers": [container], "priority": priority}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}"},
            "spec": spec}


def node(name: str, cpu: str = "4") -> dict:
    return {"metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def by_priority(first: QueuedPodInfo, second: QueuedPodInfo) -> bool:
    p1 = first.pod["spec"].get("priority", 0)
    p2 = second.pod["spec"].get("priority", 0)
    return p1 > p2 or (p1 == p2 and first.timestamp < second.timestamp)


async def test_queue_pops_by_priority_then_age() -> None:
    queue = SchedulingQueue(by_priority)
    queue.add(pod("old-low", 1))
    queue.add(pod("high", 100))
    queue.add(pod("new-low", 1))
    order = [(await queue.pop()).pod["metadata"]["name"] for _ in range(3)]  # type: ignore
    assert order == ["high", "old-low", "new-low"]


async def test_unschedulable_pods_move_only_on_events_their_plugins_registered() -> None:
    events = {"NodeResourcesFit": [ClusterEvent("Node", "Add"), ClusterEvent("Pod", "Delete")]}
    queue = SchedulingQueue(by_priority, events_for_plugin=lambda name: events.get(name, []),
                            initial_backoff=0.0)
    queue.add(pod("big"))
    queued = await queue.pop()
    assert queued is not None
    queued.unschedulable_plugins = {"NodeResourcesFit"}
    queue.add_unschedulable(queued, queue.scheduling_cycle)
    assert queue.pending_pods() == {"active": 0, "backoff": 0, "unschedulable": 1}
    queue.move_all_to_active_or_backoff(ClusterEvent("Pod", "Add"))
    assert queue.pending_pods()["unschedulable"] == 1, "a pod added does not free cpu"
    queue.move_all_to_active_or_backoff(ClusterEvent("Node", "Add"))
    assert queue.pending_pods()["active"] == 1


async def test_an_event_during_the_cycle_sends_the_pod_to_backoff_not_unschedulable() -> None:
    queue = SchedulingQueue(by_priority)
    queue.add(pod("p"))
    queued = await queue.pop()
    assert queued is not None
    cycle = queue.scheduling_cycle
    queue.move_all_to_active_or_backoff(ClusterEvent("Node", "Add"))
    queued.unschedulable_plugins = {"NodeResourcesFit"}
    queue.add_unschedulable(queued, cycle)
    assert queue.pending_pods() == {"active": 0, "backoff": 1, "unschedulable": 0}


def test_backoff_doubles_from_1s_to_10s() -> None:
    queue = SchedulingQueue(by_priority)
    queued = QueuedPodInfo(PodInfo.of(pod("p")), time.monotonic())
    durations = []
    for attempts in range(1, 7):
        queued.attempts = attempts
        durations.append(queue.backoff_duration(queued))
    assert durations == [1, 2, 4, 8, 10, 10]


async def test_closing_the_queue_releases_a_waiting_pop() -> None:
    queue = SchedulingQueue(by_priority)
    popper = asyncio.create_task(queue.pop())
    await asyncio.sleep(0.01)
    queue.close()
    async with asyncio.timeout(1):
        assert await popper is None


def test_cache_counts_assumed_pods_until_forgotten_or_confirmed() -> None:
    cache = Cache(assumed_pod_ttl=0.0)
    cache.add_node(node("n1"))
    assumed = PodInfo.of(pod("p", cpu="1"))
    cache.assume_pod(assumed, "n1")
    info = cache.update_snapshot().get("n1")
    assert info is not None and info.requested.milli_cpu == 1000
    cache.forget_pod(assumed.pod)
    info = cache.update_snapshot().get("n1")
    assert info is not None and info.requested.milli_cpu == 0
    cache.assume_pod(assumed, "n1")
    cache.add_pod(pod("p", cpu="1", node="n1"))  # the informer confirms the binding
    assert not cache.is_assumed(assumed.pod)
    info = cache.update_snapshot().get("n1")
    assert info is not None and info.requested.milli_cpu == 1000 and len(info.pods) == 1


def test_an_unconfirmed_binding_expires() -> None:
    cache = Cache(assumed_pod_ttl=0.0)
    cache.add_node(node("n1"))
    assumed = PodInfo.of(pod("p", cpu="1"))
    cache.assume_pod(assumed, "n1")
    assert cache.cleanup_expired_assumed_pods() == [], "binding not finished yet"
    cache.finish_binding(assumed.pod)
    time.sleep(0.001)
    assert [p.key for p in cache.cleanup_expired_assumed_pods()] == ["ns/p"]
    info = cache.update_snapshot().get("n1")
    assert info is not None and info.requested.milli_cpu == 0


def test_snapshot_reuses_unchanged_nodes() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    first = cache.update_snapshot()
    n1, n2 = first.get("n1"), first.get("n2")
    cache.add_pod(pod("p", cpu="1", node="n2"))
    second = cache.update_snapshot()
    assert second.get("n1") is n1
    assert second.get("n2") is not n2
    assert n2 is not None and n2.requested.milli_cpu == 0  # what the first cycle saw


def test_a_snapshot_lends_the_caches_list_of_nodes_for_its_cycle() -> None:
    """No list of thousands of nodes is copied per cycle: the next snapshot replaces the
    changed node in the same list (upstream updates its one Snapshot in place); only a
    change of the set of nodes makes a new list."""
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    first = cache.update_snapshot()
    cache.add_pod(pod("p", cpu="1", node="n2"))
    second = cache.update_snapshot()
    assert second.node_info_list is first.node_info_list
    assert [info.requested.milli_cpu for info in second.node_info_list] == [0, 1000]
    cache.add_node(node("n3"))
    third = cache.update_snapshot()
    assert third.node_info_list is not second.node_info_list
    assert [info.name for info in third.node_info_list] == ["n1", "n2", "n3"]


def test_fit_error_counts_reasons_like_upstream() -> None:
    statuses = {
        "a": Status.unschedulable("Insufficient cpu"),
        "b": Status.unschedulable("Insufficient cpu", "Insufficient memory"),
        "c": Status.unschedulable("node(s) had untolerated taint {dedicated: gpu}"),
    }
    fit = FitError(PodInfo.of(pod("p")), 3, statuses)
    fit.post_filter_message = ("preemption: 0/3 nodes are available: 3 No preemption victims "
                               "found for incoming pod.")
    assert fit.message() == (
        "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint "
        "{dedicated: gpu}, 2 Insufficient cpu. preemption: 0/3 nodes are available: 3 No "
        "preemption victims found for incoming pod.")


def test_large_clusters_stop_after_enough_feasible_nodes() -> None:
    assert num_feasible_nodes_to_find(0, 50) == 50
    assert num_feasible_nodes_to_find(0, 1000) == 420  # (50 - 1000/125)% of 1000
    assert num_feasible_nodes_to_find(0, 5000) == 500  # 10%
    assert num_feasible_nodes_to_find(0, 100000) == 5000  # at least 5%
    assert num_feasible_nodes_to_find(100, 1000) == 1000


class FailingFilter(FilterPlugin):
    """An error on the nodes named in `failing`, success elsewhere."""

    name = "FailingFilter"
    failing: set[str] = set()

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if node_info.name in self.failing:
            return Status.error(f"cannot filter {node_info.name}")
        return SUCCESS


@pytest.mark.parametrize("start,every,fit_from,failing", [
    (0, 2, 300, ""), (37, 2, 150, ""), (250, 3, 150, ""), (0, 9, 150, ""), (11, 1, 300, ""),
    (206, 4, 200, ""), (0, 3, 150, "n-250"), (0, 3, 150, "n-200"), (120, 3, 150, "n-003"),
    (0, 2, 150, "n-100")])
def test_filtering_stops_at_the_node_that_makes_up_the_number_wanted(
        start: int, every: int, fit_from: int, failing: str) -> None:
    """Whatever the chunks filtered: the first `wanted` nodes that fit from the start
    index on, statuses for the nodes turned down before the last of them, the next cycle
    starting after it, and an error only from a node before it. (Every `every`th node and
    those from n-<fit_from> on fit.)"""
    scheduler = scheduler_with(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
         "profiles": [{"schedulerName": "default-scheduler",
                       "plugins": {"filter": {"enabled": [{"name": "FailingFilter"}]}}}]},
        {"FailingFilter": FailingFilter})
    FailingFilter.failing = {failing} if failing else set()
    names = [f"n-{i:03d}" for i in range(300)]
    for i, name in enumerate(names):
        scheduler.cache.add_node(node(name, cpu="4" if i % every == 0 or i >= fit_from else "1"))
    fwk = scheduler.profiles["default-scheduler"]
    fwk.set_snapshot(scheduler.cache.update_snapshot())
    scheduler._next_start_node_index = start
    wanted = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, len(names))
    in_turn = names[start:] + names[:start]
    fits = [name for name in in_turn
            if int(name[2:]) % every == 0 or int(name[2:]) >= fit_from]
    last = in_turn.index(fits[wanted - 1]) if len(fits) >= wanted else len(names) - 1
    state = CycleState()
    pod_info = PodInfo.of(pod("p", cpu="2"))
    if failing and in_turn.index(failing) <= last:
        with pytest.raises(SchedulingError, match=f"cannot filter {failing}"):
            scheduler.find_nodes_that_fit(fwk, state, pod_info)
        return
    feasible, statuses = scheduler.find_nodes_that_fit(fwk, state, pod_info)
    assert [info.name for info in feasible] == fits[:wanted]
    assert set(statuses) == {name for name in in_turn[:last + 1] if name not in fits}
    assert scheduler._next_start_node_index == (start + last + 1) % len(names)


def test_select_host_takes_the_best_and_breaks_ties_at_random() -> None:
    assert select_host({"a": 10, "b": 30, "c": 20}) == "b"
    picked = {select_host({"a": 5, "b": 5}) for _ in range(200)}
    assert picked == {"a", "b"}


@pytest.mark.parametrize("document, message", [
    ({"profiles": [{"schedulerName": "x"}, {"schedulerName": "x"}]},
     'profiles[1].schedulerName: Duplicate value: "x"'),
    ({"profiles": [{"plugins": {"score": {"enabled": [{"name": "Nope"}]}}}]},
     'profiles[0].plugins.score.enabled[0].name: Invalid value: "Nope": plugin is not '
     "registered"),
    ({"profiles": [{"plugins": {"score": {"enabled": [{"name": "ImageLocality",
                                                       "weight": -1}]}}}]},
     "profiles[0].plugins.score.enabled[0].weight: Invalid value: -1"),
    ({"percentageOfNodesToScore": 150}, "percentageOfNodesToScore: Invalid value: 150"),
    ({"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, "apiVersion: Unsupported value"),
])
def test_bad_configurations_name_the_field(document: dict, message: str) -> None:
    full = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            **document}
    with pytest.raises(ConfigError) as raised:
        parse_configuration(full, {"ImageLocality", "NodeResourcesFit"})
    assert str(raised.value).startswith(message)


def test_the_default_configuration_has_one_default_profile() -> None:
    config = default_configuration()
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler"]
    assert config.pod_initial_backoff_seconds == 1 and config.pod_max_backoff_seconds == 10


def test_snapshot_follows_node_removal_and_pods_with_affinity() -> None:
    cache = Cache()
    for name in ("n1", "n2", "n3"):
        cache.add_node(node(name))
    with_affinity = pod("a", node="n2")
    with_affinity["spec"]["affinity"] = {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "a"}},
             "topologyKey": "kubernetes.io/hostname"}]}}
    cache.add_pod(with_affinity)
    snapshot = cache.update_snapshot()
    assert [i.name for i in snapshot.node_info_list] == ["n1", "n2", "n3"]
    assert [i.name for i in snapshot.have_pods_with_required_anti_affinity] == ["n2"]
    cache.remove_pod(with_affinity)
    cache.remove_node(node("n1"))
    snapshot = cache.update_snapshot()
    assert [i.name for i in snapshot.node_info_list] == ["n2", "n3"]
    assert snapshot.have_pods_with_affinity == []
    assert snapshot.get("n1") is None


def test_every_in_tree_plugin_implements_its_extension_points() -> None:
    from minikube_py.scheduler.plugins.registry import IN_TREE_PLUGINS
    assert [n for n, cls in IN_TREE_PLUGINS.items() if cls.__abstractmethods__] == []


def test_a_heartbeat_is_no_change_of_node_condition() -> None:
    """nodeConditionsChanged: only a condition's status, by type, counts; a kubelet's
    status report with new heartbeat times moves no unschedulable pod."""
    def node(ready: str, heartbeat: str) -> Obj:
        return {"metadata": {"name": "n"}, "status": {"conditions": [
            {"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat,
             "message": f"kubelet says {ready} at {heartbeat}"},
            {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": heartbeat}]}}

    assert node_update_actions(node("True", "10:00"), node("True", "10:05")) == []
    assert node_update_actions(node("True", "10:00"), node("False", "10:05")) == [
        "UpdateNodeCondition"]
    gone = node("True", "10:05")
    gone["status"]["conditions"].pop()
    assert node_update_actions(node("True", "10:00"), gone) == ["UpdateNodeCondition"]
