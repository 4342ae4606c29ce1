"""Sums kept from one snapshot to the next by the nodes the cache's ChangeLog names: always
those of summing every node of the snapshot afresh (NodeMemo.sums_by_label, NodeTotals,
and PodTopologySpread's PreFilter and PreScore and InterPodAffinity's PreScore built on
them); a node label's column kept the same way (NodeLabelColumn, and PodTopologySpread's
Filter built on it) always that of reading every node afresh."""

from __future__ import annotations

import random
from collections.abc import Iterator
from types import SimpleNamespace

from minikube_py.api import Obj
from minikube_py.client.store import Indexer
from minikube_py.scheduler.cache import Cache
from minikube_py.scheduler.framework.interface import CycleState, FilterPlugin
from minikube_py.scheduler.framework.types import (
    ChangeLog,
    NodeInfo,
    NodeLabelColumn,
    NodeMemo,
    NodeTotals,
    PodInfo,
    Snapshot,
)
from minikube_py.scheduler.plugins.inter_pod_affinity import (
    PRE_SCORE_STATE_KEY,
    InterPodAffinity,
)
from minikube_py.scheduler.plugins.pod_topology_spread import (
    PRE_FILTER_STATE_KEY,
    PodTopologySpread,
)
from minikube_py.scheduler.plugins.pod_topology_spread import (
    PRE_SCORE_STATE_KEY as SPREAD_PRE_SCORE_STATE_KEY,
)

ZONE = "topology.kubernetes.io/zone"


class FakeHandle:
    """The part of the framework handle the plugins use: this cycle's snapshot."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.current = snapshot

    def snapshot(self) -> Snapshot:
        return self.current


def make_node(name: str, zone: str | None) -> Obj:
    labels = {"kubernetes.io/hostname": name} | ({ZONE: zone} if zone is not None else {})
    return {"metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}


def make_pod(name: str, app: str, node: str = "") -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "i"}],
                 "topologySpreadConstraints": [{
                     "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                     "labelSelector": {"matchLabels": {"app": "web"}}}],
                 "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                     {"weight": 10, "podAffinityTerm": {
                         "labelSelector": {"matchLabels": {"app": "web"}},
                         "topologyKey": ZONE}}]}}}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "labels": {"app": app}}, "spec": spec}


class World:
    """A cache changed at random: pods placed, assumed and deleted, nodes added, deleted
    and moved to another zone (or out of every zone)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.cache = Cache()
        self.nodes: dict[str, str | None] = {}
        self.pods: dict[str, Obj] = {}
        self.serial = 0
        for index in range(12):
            self.add_node(f"node-{index}")

    def add_node(self, name: str) -> None:
        zone = self.rng.choice(["z0", "z1", "z2", None])
        self.nodes[name] = zone
        self.cache.add_node(make_node(name, zone))

    def step(self) -> None:
        """One change, mostly to pods (as between two scheduling cycles)."""
        roll = self.rng.random()
        self.serial += 1
        if roll < 0.5 or not self.pods:
            pod = make_pod(f"p-{self.serial}", self.rng.choice(["web", "db"]),
                           self.rng.choice(sorted(self.nodes)))
            self.pods[pod["metadata"]["uid"]] = pod
            self.cache.add_pod(pod)
        elif roll < 0.65:
            pod = make_pod(f"p-{self.serial}", "web")
            self.cache.assume_pod(PodInfo.of(pod), self.rng.choice(sorted(self.nodes)))
        elif roll < 0.85:
            uid = self.rng.choice(sorted(self.pods))
            self.cache.remove_pod(self.pods.pop(uid))
        elif roll < 0.9:
            self.add_node(f"node-x{self.serial}")
        elif roll < 0.95 and len(self.nodes) > 3:
            name = self.rng.choice(sorted(self.nodes))
            del self.nodes[name]
            self.cache.remove_node(make_node(name, None))
        else:
            name = self.rng.choice(sorted(self.nodes))
            self.nodes[name] = self.rng.choice(["z0", "z1", "z2", "z3", None])
            self.cache.update_node(make_node(name, self.nodes[name]))


class Walked(list[NodeInfo]):
    """A list that counts how often it is walked."""

    walks = 0

    def __iter__(self) -> Iterator[NodeInfo]:
        self.walks += 1
        return super().__iter__()


def web_pods(info: NodeInfo) -> int:
    return sum(1 for p in info.pods if p.pod["metadata"]["labels"].get("app") == "web")


def per_zone(info: NodeInfo) -> dict[tuple[str, str], int]:
    zone = info.labels.get(ZONE)
    return {("zone", zone): web_pods(info) - len(info.pods) // 3} if zone is not None else {}


def test_change_log_names_the_nodes_changed_between_two_snapshots() -> None:
    log = ChangeLog(size=3)
    first = log.record(["a"], False)
    second = log.record(["b", "c"], False)
    third = log.record(["a"], False)
    assert log.since(first, third) == {"a", "b", "c"}
    assert log.since(second, third) == {"a"}
    assert log.since(third, third) == set()
    assert log.since(first, second) == {"b", "c"}  # a later snapshot's changes left out
    assert log.since(third, second) is None
    log.record(["f"], True)  # the list of nodes changed: order may differ, unknown
    assert log.since(third, log.seq) is None
    assert log.since(third, log.seq, any_order=True) == {"f"}  # but f was added or removed
    log.record(["d"], False)
    log.record(["e"], False)
    assert log.since(first, log.seq) is None  # further back than the log keeps


def test_a_snapshot_serves_its_cycle_and_the_next_one_updates_it_in_place() -> None:
    """The cache lends a snapshot its list and indexes of nodes (by name, nodes with
    affinity pods) instead of copying them: the next snapshot replaces the changed nodes
    in them, as upstream updates its one Snapshot. The NodeInfo objects a cycle was handed
    stay as they were; a snapshot answers from the cache's current nodes once the next
    one is made."""
    cache = Cache()
    for name in ("a", "b"):
        cache.add_node(make_node(name, "z0"))
    cache.add_pod(make_pod("p-1", "web", "a"))
    first = cache.update_snapshot()
    a_then = first.get("a")
    assert a_then is not None and len(a_then.pods) == 1
    assert [info.name for info in first.have_pods_with_affinity] == ["a"]
    cache.add_pod(make_pod("p-2", "web", "b"))
    cache.remove_pod(make_pod("p-1", "web", "a"))
    second = cache.update_snapshot()
    assert second.get("a") is not a_then and len(a_then.pods) == 1
    assert [info.name for info in second.have_pods_with_affinity] == ["b"]
    assert second.get("b") is second.node_info_list[1]
    assert second.node_info_list is first.node_info_list
    assert [len(info.pods) for info in second.node_info_list] == [0, 1]


def test_kept_sums_equal_sums_made_afresh_in_every_snapshot() -> None:
    """Called at every snapshot or only now and then (so that changes of several snapshots
    are taken in at once), the kept sums are those of a fresh sum over the snapshot's
    nodes, values in the same order; the nodes looked at again are the changed ones."""
    for seed in range(6):
        world = World(seed)
        memo: NodeMemo[int] = NodeMemo()
        totals: NodeTotals[tuple[str, str]] = NodeTotals()
        looked_at: list[str] = []

        def counting(info: NodeInfo, looked_at: list[str] = looked_at) -> int:
            looked_at.append(info.name)
            return web_pods(info)

        for step in range(300):
            world.step()
            snapshot = world.cache.update_snapshot()
            if world.rng.random() < 0.4:
                continue
            nodes = snapshot.node_info_list
            looked_at.clear()
            kept = memo.sums_by_label("web", counting, nodes, ZONE, snapshot)
            fresh = NodeMemo[int]().sums_by_label("web", web_pods, nodes, ZONE)
            assert list(kept.items()) == list(fresh.items()), f"seed {seed} step {step}"
            assert totals.sums("zones", per_zone, nodes, snapshot) == \
                NodeTotals[tuple[str, str]]().sums("zones", per_zone, nodes), \
                f"seed {seed} step {step}"
        # a snapshot that changed one node's pods: only that node is looked at, the list
        # of every node is not walked
        world.cache.add_node(make_node("node-last", "z0"))
        snapshot = world.cache.update_snapshot()
        snapshot.node_info_list = Walked(snapshot.node_info_list)
        memo.sums_by_label("web", counting, snapshot.node_info_list, ZONE, snapshot)
        totals.sums("zones", per_zone, snapshot.node_info_list, snapshot)
        assert snapshot.node_info_list.walks == 2  # the list of nodes changed: all summed
        world.cache.add_pod(make_pod("last", "web", "node-last"))
        snapshot = world.cache.update_snapshot()
        snapshot.node_info_list = Walked(snapshot.node_info_list)
        looked_at.clear()
        kept = memo.sums_by_label("web", counting, snapshot.node_info_list, ZONE, snapshot)
        kept_totals = totals.sums("zones", per_zone, snapshot.node_info_list, snapshot)
        assert looked_at == ["node-last"]
        assert snapshot.node_info_list.walks == 0
        nodes = list(snapshot.node_info_list)
        assert kept == NodeMemo[int]().sums_by_label("web", web_pods, nodes, ZONE)
        assert kept_totals == NodeTotals[tuple[str, str]]().sums("zones", per_zone, nodes)

def test_kept_sums_are_not_used_for_another_list_of_nodes() -> None:
    """A list that is not the snapshot's own (some nodes only) is summed in full."""
    world = World(1)
    memo: NodeMemo[int] = NodeMemo()
    snapshot = world.cache.update_snapshot()
    every = memo.sums_by_label("web", web_pods, snapshot.node_info_list, ZONE, snapshot)
    some = snapshot.node_info_list[:4]
    assert memo.sums_by_label("web", web_pods, some, ZONE, snapshot) == \
        NodeMemo[int]().sums_by_label("web", web_pods, some, ZONE)
    assert memo.sums_by_label("web", web_pods, snapshot.node_info_list, ZONE,
                              snapshot) == every


def plugin_answers(plugins: tuple[PodTopologySpread, InterPodAffinity], snapshot: Snapshot,
                   pod: PodInfo) -> tuple[object, object]:
    """PreFilter's counts per zone (in order) and PreScore's topology score."""
    spread, affinity = plugins
    for plugin in plugins:
        assert isinstance(plugin.handle, FakeHandle)
        plugin.handle.current = snapshot
    state = CycleState()
    spread.pre_filter(state, pod, snapshot.node_info_list)
    counts = [list(by_value.items())
              for by_value in state.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num]
    status = affinity.pre_score(state, pod, snapshot.node_info_list)
    score = state.read(PRE_SCORE_STATE_KEY).topology_score if status.is_success() else None
    return counts, score


def test_the_plugins_kept_across_snapshots_answer_as_fresh_ones() -> None:
    """PodTopologySpread's PreFilter and InterPodAffinity's PreScore, one plugin of each
    kept across the cache's snapshots, give what new plugins give for each snapshot."""
    def fresh_plugins(snapshot: Snapshot) -> tuple[PodTopologySpread, InterPodAffinity]:
        return (PodTopologySpread({"defaultingType": "List"}, FakeHandle(snapshot)),
                InterPodAffinity(None, FakeHandle(snapshot)))

    for seed in range(4):
        world = World(100 + seed)
        kept = fresh_plugins(world.cache.update_snapshot())
        for step in range(150):
            world.step()
            snapshot = world.cache.update_snapshot()
            pod = PodInfo.of(make_pod(f"incoming-{step}", "web"))
            assert plugin_answers(kept, snapshot, pod) == plugin_answers(
                fresh_plugins(snapshot), snapshot, pod), f"seed {seed} step {step}"



class FakeInformers:
    """The informers PodTopologySpread reads its default selectors from: one ReplicaSet."""

    def __init__(self) -> None:
        self.stores = {plural: Indexer() for plural in ("services", "replicasets",
                                                         "statefulsets")}
        self.stores["replicasets"].put({"metadata": {"name": "web", "namespace": "ns"},
                                        "spec": {"selector": {"matchLabels": {"app": "web"}}}})

    def informer(self, plural: str, group: str | None = None) -> SimpleNamespace:
        return SimpleNamespace(store=self.stores[plural])


class HandleWithInformers(FakeHandle):
    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__(snapshot)
        self.informers = FakeInformers()


def soft_pod(name: str, constraints: list[str] | None) -> PodInfo:
    """A web replica: with soft constraints on these keys, or none (the system defaults:
    its ReplicaSet's selector, by hostname and by zone)."""
    pod = make_pod(name, "web")
    spec = pod["spec"]
    del spec["affinity"]
    spec["topologySpreadConstraints"] = [
        {"maxSkew": 2, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "web"}}} for key in constraints or []]
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                           "name": "web", "uid": "rs", "controller": True}]
    return PodInfo.of(pod)


def pre_score_answers(plugin: PodTopologySpread, snapshot: Snapshot, pod: PodInfo,
                      candidates: list[NodeInfo]) -> tuple[object, ...]:
    assert isinstance(plugin.handle, FakeHandle)
    plugin.handle.current = snapshot
    state = CycleState()
    status = plugin.pre_score(state, pod, candidates)
    if not status.is_success():
        return (status.code,)
    kept = state.read(SPREAD_PRE_SCORE_STATE_KEY)
    scores, _ = plugin.score_nodes(state, pod, candidates)
    one_by_one = [plugin.score(state, pod, info)[0] for info in candidates]
    assert scores == one_by_one
    return ([list(counts.items()) for counts in kept.topology_value_to_pod_counts],
            kept.topology_normalizing_weight, sorted(kept.ignored_nodes), scores)


def counted_afresh(snapshot: Snapshot, candidates: list[NodeInfo], key: str,
                   missing: str | None) -> list[tuple[str, int]]:
    """Each candidate domain's web pods over every node: what PreScore must find."""
    domains = dict.fromkeys(value for info in candidates
                            if (value := info.labels.get(key, missing)) is not None)
    for info in snapshot.node_info_list:
        value = info.labels.get(key, missing)
        if value in domains:
            domains[value] = (domains[value] or 0) + web_pods(info)
    return [(value, count or 0) for value, count in domains.items()]


def test_pre_score_kept_across_snapshots_counts_as_afresh() -> None:
    """PodTopologySpread's PreScore and Score, one plugin kept across the cache's snapshots
    (its domain sums brought up to date from the ChangeLog), give what a new plugin gives,
    and the counts are those of every node counted afresh: the system defaults (a node
    without a zone counts in the domain ""), one soft zone constraint (such a node is
    ignored), and a zone and a hostname constraint together."""
    for seed in range(4):
        world = World(200 + seed)
        kept = PodTopologySpread(None, HandleWithInformers(world.cache.update_snapshot()))
        for step in range(150):
            world.step()
            snapshot = world.cache.update_snapshot()
            nodes = snapshot.node_info_list
            candidates = [info for info in nodes if world.rng.random() < 0.6] or nodes
            for keys in (None, [ZONE], [ZONE, "kubernetes.io/hostname"]):
                pod = soft_pod(f"incoming-{step}", keys)
                fresh = PodTopologySpread(None, HandleWithInformers(snapshot))
                answers = pre_score_answers(kept, snapshot, pod, candidates)
                assert answers == pre_score_answers(fresh, snapshot, pod, candidates), \
                    f"seed {seed} step {step} {keys}"
                zone_counts = answers[0][0 if keys else 1]
                assert zone_counts == counted_afresh(
                    snapshot, candidates, ZONE, None if keys else ""), \
                    f"seed {seed} step {step} {keys}"


def test_image_states_kept_up_to_date_equal_image_states_counted_afresh() -> None:
    """The cache brings ImageLocality's image states up to date from the nodes that
    changed: every snapshot's are those of counting every node's images afresh, through
    nodes added, removed, pulling and dropping images, and updated without image changes."""
    images = ["echo:1", "busybox:1.36", "docker.io/library/pause:3.10", "big:1"]
    for seed in range(6):
        rng = random.Random(300 + seed)
        cache = Cache()
        held: dict[str, list[str]] = {}

        def write(name: str, cache: Cache = cache, rng: random.Random = rng,
                  held: dict[str, list[str]] = held) -> None:
            node = make_node(name, rng.choice(["z0", None]))
            node["status"]["images"] = [
                {"names": [image, f"sha-{image}"], "sizeBytes": 1000 * (len(image) + i)}
                for i, image in enumerate(held[name])]
            cache.update_node(node)

        for step in range(200):
            roll = rng.random()
            if roll < 0.15 or not held:
                name = f"node-{step}"
                held[name] = rng.sample(images, rng.randrange(3))
                write(name)
            elif roll < 0.25 and len(held) > 2:
                name = rng.choice(sorted(held))
                del held[name]
                cache.remove_node(make_node(name, None))
            elif roll < 0.6:
                name = rng.choice(sorted(held))
                held[name] = rng.sample(images, rng.randrange(4))
                write(name)
            elif roll < 0.8:  # a heartbeat or another change that leaves the images
                write(rng.choice(sorted(held)))
            else:
                pod = make_pod(f"p-{step}", "web", rng.choice(sorted(held)))
                cache.add_pod(pod)
            if rng.random() < 0.3:
                continue  # changes of several steps in one snapshot
            snapshot = cache.update_snapshot()
            fresh = Snapshot([info.clone() for info in snapshot.node_info_list])
            spread = fresh.fill_image_states()
            assert snapshot.image_spread == spread, f"seed {seed} step {step}"
            assert [info.image_states for info in snapshot.node_info_list] == [
                info.image_states for info in fresh.node_info_list], f"seed {seed} step {step}"


def in_turn(nodes: list[NodeInfo], first: int, count: int) -> list[NodeInfo]:
    """`count` nodes from position `first`, wrapping round (as the scheduler reads them)."""
    return [nodes[(first + offset) % len(nodes)] for offset in range(count)]


def test_a_kept_label_column_equals_a_column_read_afresh() -> None:
    """Brought up to date at every snapshot or only now and then, through pods placed
    and deleted and nodes added, removed and moved to another zone, the column holds each
    position's node name and label value, as reading every node again would; run_of finds
    where consecutive nodes (wrapping round) are, and nothing for other lists."""
    for seed in range(6):
        world = World(400 + seed)
        column = NodeLabelColumn(ZONE)
        for step in range(200):
            world.step()
            snapshot = world.cache.update_snapshot()
            if world.rng.random() < 0.4:
                continue
            column.bring_up_to_date(snapshot)
            nodes = snapshot.node_info_list
            where = f"seed {seed} step {step}"
            assert column.names == [info.name for info in nodes], where
            assert column.values == [info.labels.get(ZONE) for info in nodes], where
            assert column.positions == {info.name: i for i, info in enumerate(nodes)}, where
            first = world.rng.randrange(len(nodes))
            count = world.rng.randrange(1, len(nodes) + 1)
            run = in_turn(nodes, first, count)
            assert column.run_of(run, snapshot) == (first, count), where
            assert column.read(column.names, first, count) == [info.name for info in run]
            if count > 2:
                gap = run[:1] + run[2:]
                assert column.run_of(gap, snapshot) is None, where
                assert column.run_of(run[::-1], snapshot) is None, where
            moved = nodes[first].clone()  # the same node, not the snapshot's NodeInfo
            assert column.run_of([moved], snapshot) is None, where
            assert column.run_of(nodes + nodes[:1], snapshot) is None, where


class ZonedWorld(World):
    """Nodes added with a zone, so that every node mostly has one (a node moved out of
    every zone keeps PodTopologySpread on its per-node Filter until moved back)."""

    def add_node(self, name: str) -> None:
        zone = self.rng.choice(["z0", "z1", "z2"])
        self.nodes[name] = zone
        self.cache.add_node(make_node(name, zone))


def test_filter_by_the_label_column_answers_as_node_by_node() -> None:
    """PodTopologySpread's Filter for many nodes, one plugin kept across the cache's
    snapshots: for consecutive nodes of the snapshot (read from its topology key's
    column) and for other lists alike, the nodes that fit and the statuses of those
    turned down, in order, are those of filter() node by node."""
    columns_read = 0
    for seed in range(6):
        world = ZonedWorld(500 + seed)
        plugin = PodTopologySpread({"defaultingType": "List"},
                                   FakeHandle(world.cache.update_snapshot()))
        assert isinstance(plugin, FilterPlugin)
        for step in range(150):
            world.step()
            snapshot = world.cache.update_snapshot()
            assert isinstance(plugin.handle, FakeHandle)
            plugin.handle.current = snapshot
            nodes = snapshot.node_info_list
            state = CycleState()
            pod = PodInfo.of(make_pod(f"incoming-{step}", "web"))
            _, status = plugin.pre_filter(state, pod, nodes)
            assert status.is_success()
            first = world.rng.randrange(len(nodes))
            run = in_turn(nodes, first, world.rng.randrange(1, len(nodes) + 1))
            some = [info for info in nodes if world.rng.random() < 0.5] or nodes[:1]
            for asked in (run, some, nodes):
                fit, rejected = plugin.filter_nodes_split(state, pod, asked)
                one_by_one = {info.name: plugin.filter(state, pod, info) for info in asked}
                assert fit == [info for info in asked if not one_by_one[info.name].code]
                assert [(name, answer.code, answer.reasons)
                        for name, answer in rejected.items()] == [
                    (name, answer.code, answer.reasons)
                    for name, answer in one_by_one.items() if answer.code], \
                    f"seed {seed} step {step}"
                assert rejected == plugin.filter_nodes(state, pod, asked)
        columns_read += ZONE in plugin.columns
    assert columns_read == 6  # the column was read, not only the per-node Filter
