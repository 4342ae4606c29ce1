"""The data the scheduling framework works on (upstream framework/types.go).

- `Resource`: an amount of cpu (millicores), memory (bytes), ephemeral storage, pods and
  extended resources such as `nvidia.com/gpu`.
- `PodInfo`: a pod plus what plugins would otherwise parse again and again (its
  requests, its affinity terms).
- `NodeInfo`: a node plus the pods on it and their sums: requested resources, host ports
  in use, pods with (anti-)affinity. Plugins read a NodeInfo, never the API server.
- `Snapshot`: every NodeInfo at the start of one scheduling cycle; the cycle sees a
  world that does not change under it.
- `NodeMemo`: per-node results a plugin reuses while the snapshot keeps a node unchanged.
- `ChangeLog`: which nodes each of the cache's recent snapshots changed, so that sums over
  every node can be brought up to date from the nodes that changed alone.
- `NodeLabelColumn`: a node label's value at each position of the snapshot's list of
  nodes, kept the same way, for plugins that turn many nodes down by a label.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from operator import is_
from sys import intern
from typing import Any, Generic, TypeVar

import orjson

from minikube_py.api import Obj
from minikube_py.api.quantity import cpu_millis, memory_bytes, parse_quantity
from minikube_py.api.selectors import LabelSelector, label_selector_from_dict

V = TypeVar("V")
K = TypeVar("K", bound=Hashable)

# Pods without requests still count for spreading scores (upstream's non-zero defaults).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"


@dataclass(slots=True)
class Resource:
    """Amounts of compute resources (framework.Resource)."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar_resources: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, resources: Obj | None) -> Resource:
        """A ResourceList (`{"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"}`)."""
        result = cls()
        for name, value in (resources or {}).items():
            result.add_named(name, value)
        return result

    def add_named(self, name: str, value: Any) -> None:
        if name == CPU:
            self.milli_cpu += cpu_millis(value)
        elif name == MEMORY:
            self.memory += memory_bytes(value)
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage += memory_bytes(value)
        elif name == PODS:
            self.allowed_pod_number += int(parse_quantity(value))
        elif is_scalar_resource_name(name):
            self.scalar_resources[name] = self.scalar_resources.get(name, 0) + int(
                parse_quantity(value))

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for name, amount in other.scalar_resources.items():
            self.scalar_resources[name] = self.scalar_resources.get(name, 0) + amount

    def subtract(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for name, amount in other.scalar_resources.items():
            self.scalar_resources[name] = self.scalar_resources.get(name, 0) - amount

    def set_max(self, other: Resource) -> None:
        """Each amount becomes the larger of the two (init containers run one at a time)."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        for name, amount in other.scalar_resources.items():
            self.scalar_resources[name] = max(self.scalar_resources.get(name, 0), amount)

    def get(self, name: str) -> int:
        """The amount of one named resource (millicores for cpu, bytes for memory)."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar_resources.get(name, 0)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage,
                        self.allowed_pod_number, dict(self.scalar_resources))


def is_scalar_resource_name(name: str) -> bool:
    """Extended (`example.com/foo`), hugepages-* and attachable-volumes-* resources."""
    if name.startswith(("hugepages-", "attachable-volumes-")):
        return True
    return "/" in name and not name.startswith("kubernetes.io/") and not name.startswith(
        "requests.")


def _is_restartable_init(container: Obj) -> bool:
    return container.get("restartPolicy") == "Always"


def pod_requests(pod: Obj, *, non_zero: bool = False) -> Resource:
    """resourcehelper.PodRequests: what the pod asks of its node.

    The sum over app containers, and over sidecars (init containers with
    restartPolicy Always, which keep running); each ordinary init container runs alone,
    so the result is at least the largest of them plus the sidecars started before it;
    plus the pod's overhead. With `non_zero`, a container without a cpu or memory request
    counts as 100m / 200Mi (used by scoring, so empty pods still spread).
    """
    spec = pod.get("spec") or {}
    total = Resource()
    for container in spec.get("containers") or []:
        total.add(_container_requests(container, non_zero))
    sidecars = Resource()
    init_peak = Resource()
    for container in spec.get("initContainers") or []:
        requests = _container_requests(container, non_zero)
        if _is_restartable_init(container):
            sidecars.add(requests)
            total.add(requests)
            continue
        with_sidecars = requests.clone()
        with_sidecars.add(sidecars)
        init_peak.set_max(with_sidecars)
    total.set_max(init_peak)
    overhead = spec.get("overhead")
    if overhead:
        total.add(Resource.from_list(overhead))
    return total


def _container_requests(container: Obj, non_zero: bool) -> Resource:
    resources = container.get("resources") or {}
    requests = dict(resources.get("requests") or {})
    # An unset request defaults to the limit (the API server does this on create too).
    for name, limit in (resources.get("limits") or {}).items():
        requests.setdefault(name, limit)
    result = Resource.from_list(requests)
    if non_zero:
        if CPU not in requests:
            result.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
        if MEMORY not in requests:
            result.memory = DEFAULT_MEMORY_REQUEST
    return result


@dataclass(frozen=True)
class AffinityTerm:
    """A parsed PodAffinityTerm: which pods (selector, namespaces) on which topology."""

    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    topology_key: str

    def matches(self, pod: Obj, namespace_labels: dict[str, str] | None = None) -> bool:
        """Does `pod` belong to the set of pods this term is about?"""
        meta = pod.get("metadata") or {}
        in_namespace = meta.get("namespace", "") in self.namespaces
        if not in_namespace and self.namespace_selector is not None:
            in_namespace = self.namespace_selector.matches(namespace_labels or {})
        return in_namespace and self.selector.matches(meta.get("labels"))


@dataclass(frozen=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


def _affinity_term(term: Obj, pod_namespace: str) -> AffinityTerm:
    namespaces = frozenset(term.get("namespaces") or [])
    namespace_selector = term.get("namespaceSelector")
    selector = dict(term.get("labelSelector") or {})
    labels = label_selector_from_dict(selector) if term.get("labelSelector") is not None else (
        LabelSelector.match_nothing())
    parsed_ns_selector = None
    if namespace_selector is not None:
        parsed_ns_selector = label_selector_from_dict(namespace_selector)
    if not namespaces and namespace_selector is None:
        namespaces = frozenset({pod_namespace})
    return AffinityTerm(labels, namespaces, parsed_ns_selector, term.get("topologyKey", ""))


@dataclass(slots=True)
class PodInfo:
    """A pod and its parsed requests and affinity terms (framework.PodInfo)."""

    pod: Obj
    requests: Resource
    non_zero_requests: Resource
    required_affinity_terms: list[AffinityTerm]
    required_anti_affinity_terms: list[AffinityTerm]
    preferred_affinity_terms: list[WeightedAffinityTerm]
    preferred_anti_affinity_terms: list[WeightedAffinityTerm]
    _spec_key: tuple[Obj, bytes] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, pod: Obj) -> PodInfo:
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        affinity = (pod.get("spec") or {}).get("affinity") or {}
        pod_affinity = affinity.get("podAffinity") or {}
        anti_affinity = affinity.get("podAntiAffinity") or {}

        def required(block: Obj) -> list[AffinityTerm]:
            return [_affinity_term(term, namespace) for term in
                    block.get("requiredDuringSchedulingIgnoredDuringExecution") or []]

        def preferred(block: Obj) -> list[WeightedAffinityTerm]:
            return [WeightedAffinityTerm(_affinity_term(item.get("podAffinityTerm") or {},
                                                        namespace), int(item.get("weight", 0)))
                    for item in block.get("preferredDuringSchedulingIgnoredDuringExecution")
                    or []]

        return cls(pod, pod_requests(pod), pod_requests(pod, non_zero=True),
                   required(pod_affinity), required(anti_affinity),
                   preferred(pod_affinity), preferred(anti_affinity))

    @property
    def name(self) -> str:
        return self.pod["metadata"]["name"]

    @property
    def namespace(self) -> str:
        return self.pod["metadata"].get("namespace", "")

    @property
    def uid(self) -> str:
        return self.pod["metadata"].get("uid", "")

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def spec_key(self) -> bytes:
        """The pod's spec as canonical JSON: pods with equal specs (replicas) share it."""
        if self._spec_key is None or self._spec_key[0] is not self.pod:
            spec = self.pod.get("spec") or {}
            self._spec_key = (self.pod, orjson.dumps(spec, option=orjson.OPT_SORT_KEYS))
        return self._spec_key[1]

    def has_affinity(self) -> bool:
        return bool(self.required_affinity_terms or self.required_anti_affinity_terms
                    or self.preferred_affinity_terms or self.preferred_anti_affinity_terms)


@dataclass(frozen=True)
class HostPort:
    ip: str
    protocol: str
    port: int


def host_ports(pod: Obj) -> list[HostPort]:
    """GetHostPorts: the host ports of the app containers and of the sidecars (init
    containers with restartPolicy Always, which run as long as the pod); an unset hostIP
    binds every address (0.0.0.0), an unset protocol is TCP."""
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if _is_restartable_init(c)]
    ports = []
    for container in sidecars + list(spec.get("containers") or []):
        for port in container.get("ports") or []:
            if int(port.get("hostPort") or 0) > 0:
                ports.append(HostPort(port.get("hostIP") or "0.0.0.0",
                                      port.get("protocol") or "TCP", int(port["hostPort"])))
    return ports


@dataclass(slots=True)
class NodeInfo:
    """A node and the pods the scheduler believes run on it (framework.NodeInfo)."""

    node: Obj
    pods: list[PodInfo] = field(default_factory=list)
    requested: Resource = field(default_factory=Resource)
    non_zero_requested: Resource = field(default_factory=Resource)
    allocatable: Resource = field(default_factory=Resource)
    used_ports: set[HostPort] = field(default_factory=set)
    pods_with_affinity: list[PodInfo] = field(default_factory=list)
    pods_with_required_anti_affinity: list[PodInfo] = field(default_factory=list)
    # image name -> (size in bytes, how many nodes have it); filled by the snapshot
    image_states: dict[str, tuple[int, int]] = field(default_factory=dict)
    generation: int = 0

    @classmethod
    def of(cls, node: Obj, pods: Iterable[Obj | PodInfo] = ()) -> NodeInfo:
        info = cls(node=node)
        info.set_node(node)
        for pod in pods:
            info.add_pod(pod if isinstance(pod, PodInfo) else PodInfo.of(pod))
        return info

    # What plugins read of every node, kept as plain attributes (set with the node).
    name: str = field(default="", init=False)
    labels: dict[str, str] = field(default_factory=dict, init=False)
    taints: list[Obj] = field(default_factory=list, init=False)
    unschedulable: bool = field(default=False, init=False)
    # Bumped when the Node object itself changes (not its pods): image states follow it.
    node_generation: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._read_node()

    def _read_node(self) -> None:
        metadata, spec = self.node.get("metadata") or {}, self.node.get("spec") or {}
        self.name = metadata.get("name", "")
        # Interned, so a lookup by an interned topology key, and a look-up of the value
        # in a table keyed by values seen on other nodes, compare by identity.
        self.labels = {intern(key): intern(value) if isinstance(value, str) else value
                       for key, value in (metadata.get("labels") or {}).items()}
        self.taints = spec.get("taints") or []
        self.unschedulable = bool(spec.get("unschedulable"))

    def set_node(self, node: Obj) -> None:
        self.node = node
        self._read_node()
        self.allocatable = Resource.from_list((node.get("status") or {}).get("allocatable"))
        self.generation += 1
        self.node_generation += 1

    def add_pod(self, pod_info: PodInfo) -> None:
        self.pods.append(pod_info)
        self.requested.add(pod_info.requests)
        self.non_zero_requested.add(pod_info.non_zero_requests)
        self.used_ports.update(host_ports(pod_info.pod))
        if pod_info.has_affinity():
            self.pods_with_affinity.append(pod_info)
        if pod_info.required_anti_affinity_terms:
            self.pods_with_required_anti_affinity.append(pod_info)
        self.generation += 1

    def remove_pod(self, pod: Obj) -> bool:
        """Take a pod off the node (by uid); False if it was not there."""
        uid = (pod.get("metadata") or {}).get("uid", "")
        for index, pod_info in enumerate(self.pods):
            if pod_info.uid == uid:
                del self.pods[index]
                self.requested.subtract(pod_info.requests)
                self.non_zero_requested.subtract(pod_info.non_zero_requests)
                self.pods_with_affinity = [p for p in self.pods_with_affinity if p.uid != uid]
                self.pods_with_required_anti_affinity = [
                    p for p in self.pods_with_required_anti_affinity if p.uid != uid]
                self.used_ports = {port for p in self.pods for port in host_ports(p.pod)}
                self.generation += 1
                return True
        return False

    def clone(self) -> NodeInfo:
        """A copy whose pod list and sums can change without touching this one."""
        twin = copy.copy(self)
        twin.pods = list(self.pods)
        twin.requested = self.requested.clone()
        twin.non_zero_requested = self.non_zero_requested.clone()
        twin.allocatable = self.allocatable.clone()
        twin.used_ports = set(self.used_ports)
        twin.pods_with_affinity = list(self.pods_with_affinity)
        twin.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        twin.image_states = dict(self.image_states)
        return twin


class ChangeLog:
    """The names of the nodes each of the cache's last `size` snapshots changed (copied
    again, added or removed), by snapshot sequence number (upstream's snapshot generation)."""

    def __init__(self, size: int = 64) -> None:
        self.seq = 0
        # (seq, the names it changed, whether the list of nodes itself changed)
        self._entries: deque[tuple[int, frozenset[str], bool]] = deque(maxlen=size)

    def record(self, names: Iterable[str], membership_changed: bool) -> int:
        """A new snapshot changed these nodes (the nodes added and removed among them);
        its sequence number."""
        self.seq += 1
        self._entries.append((self.seq, frozenset(names), membership_changed))
        return self.seq

    def since(self, seq: int, upto: int, any_order: bool = False) -> set[str] | None:
        """The nodes changed after snapshot `seq` up to snapshot `upto`, or None when that is
        unknown (too far back, or the list of nodes changed in between: order may differ;
        given `any_order`, for users to whom the order of nodes is no matter, the nodes
        added and removed are named among the changed ones instead)."""
        if seq > upto or (seq < upto and (not self._entries or self._entries[0][0] > seq + 1)):
            return None
        names: set[str] = set()
        for entry_seq, changed, membership_changed in reversed(self._entries):
            if entry_seq <= seq:
                break
            if entry_seq <= upto:
                if membership_changed and not any_order:
                    return None
                names.update(changed)
        return names


class Snapshot:
    """Every node's NodeInfo at the start of a scheduling cycle (the NodeInfoLister)."""

    def __init__(self, node_infos: Iterable[NodeInfo] = (),
                 namespace_labels: dict[str, dict[str, str]] | None = None) -> None:
        self.node_info_list = list(node_infos)
        self._by_name: dict[str, NodeInfo] | None = None  # made on first use
        self.namespace_labels = namespace_labels or {}
        # On how many nodes each image is (fill_image_states); None: not counted.
        self.image_spread: dict[str, int] | None = None
        self._with_affinity: list[NodeInfo] | None = None
        self._with_required_anti_affinity: list[NodeInfo] | None = None
        # The cache's change log and this snapshot's number in it (None: not from a cache).
        self.changes: ChangeLog | None = None
        self.seq = 0
        # The cache's own indexes of these nodes, lent (see lend_indexes).
        self._lent: tuple[Mapping[str, NodeInfo], Mapping[str, NodeInfo],
                          Mapping[str, NodeInfo]] | None = None

    def changed_since(self, changes: ChangeLog | None, seq: int, any_order: bool = False
                      ) -> set[str] | None:
        """The nodes changed since snapshot `seq` of `changes` (None: unknown, look at all;
        see ChangeLog.since for `any_order`)."""
        if changes is None or changes is not self.changes:
            return None
        return changes.since(seq, self.seq, any_order)

    def lend_indexes(self, by_name: Mapping[str, NodeInfo], with_affinity: Mapping[str, NodeInfo],
                     with_required_anti_affinity: Mapping[str, NodeInfo]) -> None:
        """The cache lends its own indexes of this snapshot's nodes (by name; those running
        pods with affinity; with required anti-affinity) instead of copying them each cycle,
        as it lends its node_info_list. They are this snapshot's until the cache makes its
        next one (its change log moves on); after that the snapshot makes its own from
        node_info_list (which the next snapshot has brought up to date in place)."""
        self._lent = (by_name, with_affinity, with_required_anti_affinity)

    def _indexes(self) -> tuple[Mapping[str, NodeInfo], Mapping[str, NodeInfo],
                                Mapping[str, NodeInfo]] | None:
        """The lent indexes while they are still this snapshot's, else None."""
        if self._lent is not None and self.changes is not None and \
                self.changes.seq != self.seq:
            self._lent = None
        return self._lent

    @property
    def have_pods_with_affinity(self) -> list[NodeInfo]:
        """Nodes running pods with (anti-)affinity terms (computed on first use)."""
        if self._with_affinity is None:
            lent = self._indexes()
            self._with_affinity = list(lent[1].values()) if lent is not None else [
                i for i in self.node_info_list if i.pods_with_affinity]
        return self._with_affinity

    @property
    def have_pods_with_required_anti_affinity(self) -> list[NodeInfo]:
        if self._with_required_anti_affinity is None:
            lent = self._indexes()
            self._with_required_anti_affinity = list(lent[2].values()) if lent is not None \
                else [i for i in self.node_info_list if i.pods_with_required_anti_affinity]
        return self._with_required_anti_affinity

    @classmethod
    def of(cls, nodes: Iterable[Obj], pods: Iterable[Obj] = ()) -> Snapshot:
        """A snapshot from plain objects: pods are placed by their spec.nodeName (tests)."""
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            by_node.setdefault((pod.get("spec") or {}).get("nodeName", ""), []).append(pod)
        infos = [NodeInfo.of(node, by_node.get(node["metadata"]["name"]) or []) for node in nodes]
        snapshot = cls(infos)
        snapshot.fill_image_states()
        return snapshot

    def get(self, name: str) -> NodeInfo | None:
        lent = self._indexes()
        if lent is not None:
            return lent[0].get(name)
        if self._by_name is None:
            self._by_name = {info.name: info for info in self.node_info_list}
        return self._by_name.get(name)

    def __len__(self) -> int:
        return len(self.node_info_list)

    def fill_image_states(self) -> dict[str, int]:
        """ImageStateSummary: each image's size and on how many nodes it is present.
        Returns (and keeps as image_spread) the number of nodes holding each image."""
        spread: dict[str, int] = {}
        sizes: dict[str, dict[str, int]] = {}
        for info in self.node_info_list:
            node_sizes = node_image_sizes(info.node)
            sizes[info.name] = node_sizes
            for name in node_sizes:
                spread[name] = spread.get(name, 0) + 1
        for info in self.node_info_list:
            info.image_states = {name: (size, spread[name])
                                 for name, size in sizes[info.name].items()}
        self.image_spread = spread
        return spread


class NodeMemo(Generic[V]):
    """What a plugin computed from one node, remembered from one scheduling cycle to the next.

    Some per-node results (how many pods on the node a selector matches) depend on nothing
    but the node, its pods and a few inputs from the pod being scheduled. The cache's
    snapshots hand out the same NodeInfo object for as long as its node and pods are
    unchanged (a change makes a fresh copy), so a result is kept with the NodeInfo it came
    from and reused while a snapshot still holds that very object. Results are grouped by a
    key naming those other inputs; only the `size` most recently used keys are kept.
    Callers must not modify a remembered result.
    """

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._tables: dict[Hashable, dict[str, tuple[NodeInfo, V]]] = {}
        # (key, label, missing) -> the snapshot sums_by_label last summed: its change log and
        # number, each node's label value and part, the sums
        self._label_sums: dict[tuple[Hashable, str, str | None], tuple[
            ChangeLog | None, int, dict[str, tuple[str, int]], dict[str, int]]] = {}

    def _table(self, key: Hashable) -> dict[str, tuple[NodeInfo, V]]:
        table = self._tables.pop(key, None) or {}
        self._tables[key] = table  # most recently used last
        while len(self._tables) > self.size:
            del self._tables[next(iter(self._tables))]
        return table

    def per_node(self, key: Hashable, compute: Callable[[NodeInfo], V]
                 ) -> Callable[[NodeInfo], V]:
        """lookup(node_info): compute(node_info), or the result remembered for that object."""
        table = self._table(key)

        def lookup(node_info: NodeInfo) -> V:
            remembered = table.get(node_info.name)
            if remembered is not None and remembered[0] is node_info:
                return remembered[1]
            value = compute(node_info)
            table[node_info.name] = (node_info, value)
            return value

        return lookup

    def for_nodes(self, key: Hashable, compute: Callable[[NodeInfo], V],
                  nodes: list[NodeInfo]) -> list[V]:
        """The value for each node, in order: per_node(key, compute) over the list, in one
        loop (a call per node costs more than the lookup inside it)."""
        table = self._table(key)
        values = []
        for node_info in nodes:
            remembered = table.get(node_info.name)
            if remembered is None or remembered[0] is not node_info:
                remembered = (node_info, compute(node_info))
                table[node_info.name] = remembered
            values.append(remembered[1])
        return values

    def sums_by_label(self: NodeMemo[int], key: Hashable, compute: Callable[[NodeInfo], int],
                      nodes: list[NodeInfo], label: str, snapshot: Snapshot | None = None,
                      missing: str | None = None) -> dict[str, int]:
        """Per value of the node label `label`: compute(node_info) summed over the nodes that
        have it, values in the order they first appear (for_nodes and the sum in one loop).
        A node without the label is left out, or, given `missing`, summed under that value.

        When `nodes` is `snapshot`'s list of every node, the sums of the last call with the
        same key and label are brought up to date from the nodes the snapshots changed since
        (their ChangeLog) instead of summing every node again; a change of the list of nodes
        or of a node's label value sums them all again."""
        table = self._table(key)
        sums_key = (key, label, missing)
        kept = self._label_sums.pop(sums_key, None)
        if snapshot is not None and nodes is snapshot.node_info_list and kept is not None:
            changes, seq, parts, sums = kept
            changed = snapshot.changed_since(changes, seq)
            if changed is not None and self._bring_up_to_date(
                    table, compute, snapshot, label, missing, changed, parts, sums):
                self._keep_label_sums(sums_key, (changes, snapshot.seq, parts, sums))
                return dict(sums)
        parts = {}
        sums = {}
        for node_info in nodes:
            value = node_info.labels.get(label, missing)
            if value is None:
                continue
            remembered = table.get(node_info.name)
            if remembered is None or remembered[0] is not node_info:
                remembered = (node_info, compute(node_info))
                table[node_info.name] = remembered
            parts[node_info.name] = (value, remembered[1])
            sums[value] = sums.get(value, 0) + remembered[1]
        if snapshot is not None and nodes is snapshot.node_info_list:
            self._keep_label_sums(sums_key, (snapshot.changes, snapshot.seq, parts, sums))
        return dict(sums)

    def labelled_nodes(self, key: Hashable, label: str) -> int | None:
        """How many nodes have the label, among those the last sums_by_label(key, ...,
        label) call over a whole snapshot looked at; None when no such sums are kept."""
        kept = self._label_sums.get((key, label, None))
        return len(kept[2]) if kept is not None else None

    def _keep_label_sums(self, sums_key: tuple[Hashable, str, str | None], kept: tuple[
            ChangeLog | None, int, dict[str, tuple[str, int]], dict[str, int]]) -> None:
        """Keep sums_by_label's sums as the most recently used; only `size` are kept."""
        self._label_sums[sums_key] = kept
        while len(self._label_sums) > self.size:
            del self._label_sums[next(iter(self._label_sums))]

    @staticmethod
    def _bring_up_to_date(table: dict[str, tuple[NodeInfo, int]],
                          compute: Callable[[NodeInfo], int], snapshot: Snapshot, label: str,
                          missing: str | None, changed: set[str],
                          parts: dict[str, tuple[str, int]], sums: dict[str, int]) -> bool:
        """Take back the changed nodes' old parts of the sums and add their new ones; False
        (sums left half done) when a node's label value changed, which may reorder them."""
        for name in changed:
            node_info = snapshot.get(name)
            old = parts.get(name)
            value = node_info.labels.get(label, missing) if node_info is not None else None
            if old is None and value is None:
                continue
            if old is None or old[0] != value or node_info is None:
                return False
            remembered = table.get(name)
            if remembered is None or remembered[0] is not node_info:
                remembered = (node_info, compute(node_info))
                table[name] = remembered
            sums[value] += remembered[1] - old[1]
            parts[name] = (value, remembered[1])
        return True


class NodeTotals(Generic[K]):
    """Sums over a list of nodes of what each node adds, kept from one cycle to the next.

    compute(node_info) says what one node adds to each sum, by name (a topology pair, ...).
    A node's part is remembered with its NodeInfo as in NodeMemo; each call takes back the
    parts of nodes whose NodeInfo changed or that left the list and adds their new parts,
    instead of adding up every node again. A sum is present while some node adds to it,
    even when it comes to 0. Results are grouped by a key naming compute's other inputs;
    only the `size` most recently used keys are kept.
    """

    def __init__(self, size: int = 32) -> None:
        self.size = size
        # key -> (each node's NodeInfo and part by name, the sums, how many nodes add to
        # each, [the change log and number of the snapshot last summed over every node])
        self._tables: dict[Hashable, tuple[dict[str, tuple[NodeInfo, dict[K, int]]],
                                           dict[K, int], dict[K, int], list[Any]]] = {}

    def sums(self, key: Hashable, compute: Callable[[NodeInfo], dict[K, int]],
             nodes: list[NodeInfo], snapshot: Snapshot | None = None) -> dict[K, int]:
        """Each name's sum over the nodes (a new dict the caller may keep). When `nodes` is
        `snapshot`'s list of every node and the last call with this key summed an earlier
        snapshot of the same cache, only the nodes changed since (its ChangeLog) are
        looked at."""
        table = self._tables.pop(key, None) or ({}, {}, {}, [None, 0])
        self._tables[key] = table  # most recently used last
        while len(self._tables) > self.size:
            del self._tables[next(iter(self._tables))]
        parts, sums, counts, synced = table
        every_node = snapshot if snapshot is not None and nodes is snapshot.node_info_list \
            else None
        changed = None
        in_turn = nodes
        if every_node is not None:
            changed = every_node.changed_since(synced[0], synced[1])
        if every_node is not None and changed is not None:
            # the list of nodes is what it was (else changed is None): each changed one is in it
            in_turn = [info for info in map(every_node.get, changed) if info is not None]
        for node_info in in_turn:
            remembered = parts.get(node_info.name)
            if remembered is not None:
                if remembered[0] is node_info:
                    continue
                _take_back(remembered[1], sums, counts)
            part = compute(node_info)
            for name, value in part.items():
                sums[name] = sums.get(name, 0) + value
                counts[name] = counts.get(name, 0) + 1
            parts[node_info.name] = (node_info, part)
        if changed is None and len(parts) > len(nodes):  # some nodes left the list
            names = {node_info.name for node_info in nodes}
            for gone in [name for name in parts if name not in names]:
                _take_back(parts.pop(gone)[1], sums, counts)
        synced[:] = [every_node.changes, every_node.seq] if every_node is not None else [None, 0]
        return dict(sums)


class NodeLabelColumn:
    """One node label's value at each position of a snapshot's list of nodes, with each
    position's node name, kept from one snapshot to the next.

    A plugin that turns nodes down by a label's value (PodTopologySpread: the domains over
    the skew) reads the values of a run of positions from here, at C speed, instead of
    each NodeInfo's labels: in a cluster of thousands of nodes, most of what a per-node
    loop costs is fetching NodeInfos scattered through memory. Brought up to date from the
    snapshot's change log (its ChangeLog): the nodes changed since are read again; a change
    of the list of nodes itself reads all of them again.
    """

    __slots__ = ("label", "values", "names", "positions", "_synced")

    def __init__(self, label: str) -> None:
        self.label = label
        self.values: list[str | None] = []  # the label's value per position (None: no label)
        self.names: list[str] = []  # the node name per position
        self.positions: dict[str, int] = {}  # node name -> position
        self._synced: tuple[ChangeLog | None, int] | None = None

    def bring_up_to_date(self, snapshot: Snapshot) -> None:
        """Make the column `snapshot`'s: its changed nodes read again, or every node."""
        changed = snapshot.changed_since(*self._synced) if self._synced is not None else None
        if changed is None:
            nodes = snapshot.node_info_list
            self.names = [info.name for info in nodes]
            self.values = [info.labels.get(self.label) for info in nodes]
            self.positions = {name: index for index, name in enumerate(self.names)}
        else:  # the list of nodes is what it was: each changed node is where it was
            for name in changed:
                info = snapshot.get(name)
                if info is not None:
                    self.values[self.positions[name]] = info.labels.get(self.label)
        self._synced = (snapshot.changes, snapshot.seq) if snapshot.changes is not None \
            else None

    def run_of(self, nodes: list[NodeInfo], snapshot: Snapshot) -> tuple[int, int] | None:
        """(first position, how many) when `nodes` are consecutive nodes of the snapshot's
        list (wrapping round at its end, as the scheduler reads them in turn), else None.
        Compares identities only: no NodeInfo is looked into but the first."""
        every_node = snapshot.node_info_list
        first = self.positions.get(nodes[0].name) if nodes else None
        if first is None or len(nodes) > len(every_node) or every_node[first] is not nodes[0]:
            return None
        head = every_node[first:first + len(nodes)]
        tail = every_node[:len(nodes) - len(head)]
        if not all(map(is_, head, nodes)) or not all(map(is_, tail, nodes[len(head):])):
            return None
        return first, len(nodes)

    @staticmethod
    def read(column: list[Any], first: int, count: int) -> list[Any]:
        """`count` entries of a column (values or names) from `first`, wrapping round."""
        part = column[first:first + count]
        if len(part) < count:
            part += column[:count - len(part)]
        return part


def _take_back(part: dict[K, int], sums: dict[K, int], counts: dict[K, int]) -> None:
    """Subtract one node's part from the sums, dropping sums no node adds to any more."""
    for name, value in part.items():
        if counts[name] == 1:
            del sums[name], counts[name]
        else:
            sums[name] -= value
            counts[name] -= 1


def node_image_sizes(node: Obj) -> dict[str, int]:
    """The images a Node's status lists: each name (normalized) -> its size in bytes."""
    sizes: dict[str, int] = {}
    for image in (node.get("status") or {}).get("images") or []:
        for name in image.get("names") or []:
            sizes[normalized_image_name(name)] = int(image.get("sizeBytes", 0))
    return sizes


def normalized_image_name(name: str) -> str:
    """An image name with a tag (`:latest` added when there is neither tag nor digest)."""
    last = name.rsplit("/", 1)[-1]
    if ":" not in last and "@" not in last:
        return name + ":latest"
    return name
