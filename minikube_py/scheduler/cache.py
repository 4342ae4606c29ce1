"""The scheduler's cache: nodes and the pods on them, including *assumed* pods
(upstream internal/cache).

Binding takes a round trip to the API server, and the pod informer hears about it later
still. The scheduler cannot wait: the moment it picks a node, it *assumes* the pod there
(Reserve), so the next cycle already counts the pod's cpu and memory on that node. When
the informer reports the pod bound, the assumption is confirmed; if the binding fails,
the pod is forgotten; if no confirmation ever comes, the assumption expires.

Each scheduling cycle works on a `Snapshot` taken from the cache: only nodes that changed
since the last snapshot are copied again, and the snapshot's list of nodes is the cache's
own, valid for that cycle (the next snapshot replaces the changed nodes in it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from minikube_py.api import Obj
from minikube_py.scheduler.framework.types import (
    ChangeLog,
    NodeInfo,
    PodInfo,
    Snapshot,
    node_image_sizes,
)

ASSUMED_POD_TTL = 30.0  # seconds an assumed, bound pod waits for the informer to confirm


@dataclass(slots=True)
class _PodState:
    pod_info: PodInfo
    node_name: str
    assumed: bool = False
    binding_finished: bool = False
    deadline: float | None = None


def _uid(pod: Obj) -> str:
    return (pod.get("metadata") or {}).get("uid", "")


def _node_of(pod: Obj) -> str:
    return (pod.get("spec") or {}).get("nodeName", "")


class Cache:
    """NodeInfos by name; pod states by uid; snapshots for the scheduling cycle."""

    def __init__(self, assumed_pod_ttl: float = ASSUMED_POD_TTL) -> None:
        self.assumed_pod_ttl = assumed_pod_ttl
        self._nodes: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}
        # the last snapshot: generation and copy of each node, by name, and their order
        self._snapshot_infos: dict[str, tuple[int, NodeInfo]] = {}
        self._snapshot_by_name: dict[str, NodeInfo] = {}
        self._snapshot_list: list[NodeInfo] = []
        self._snapshot_positions: dict[str, int] = {}
        self._snapshot_with_affinity: dict[str, NodeInfo] = {}
        self._snapshot_with_anti_affinity: dict[str, NodeInfo] = {}
        # the images of the snapshot's nodes (name -> size, by node) and the nodes holding
        # each image, kept up to date from the nodes whose Node changed (ImageLocality's)
        self._node_images: dict[str, dict[str, int]] = {}
        self._image_nodes: dict[str, set[str]] = {}
        self._image_spread: dict[str, int] = {}
        # nodes changed since the last snapshot (their pods or the Node itself)
        self._dirty: set[str] = set()
        # which nodes each snapshot changed (plugins bring their sums up to date from them)
        self._changes = ChangeLog()
        self.namespace_labels: dict[str, dict[str, str]] = {}

    def _node_info(self, name: str) -> NodeInfo:
        """The node's NodeInfo, about to change (so the next snapshot copies it again)."""
        self._dirty.add(name)
        info = self._nodes.get(name)
        if info is None:  # a pod on a node we have not heard of yet: a placeholder
            info = NodeInfo(node={"metadata": {"name": name}})
            self._nodes[name] = info
        return info

    # -- nodes -----------------------------------------------------------------------------------

    def add_node(self, node: Obj) -> None:
        self._node_info(node["metadata"]["name"]).set_node(node)

    update_node = add_node

    def remove_node(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        info = self._nodes.get(name)
        if info is None:
            return
        self._dirty.add(name)
        if info.pods:  # pods still point at it: keep a node-less placeholder
            info.set_node({"metadata": {"name": name}})
        else:
            del self._nodes[name]

    def node_names(self) -> list[str]:
        return [name for name, info in self._nodes.items() if "status" in info.node]

    # -- pods ------------------------------------------------------------------------------------

    def assume_pod(self, pod_info: PodInfo, node_name: str) -> None:
        """Reserve: count the pod on the node now, before the binding is written."""
        uid = pod_info.uid
        if uid in self._pods:
            raise ValueError(f"pod {pod_info.key} is already in the cache")
        self._node_info(node_name).add_pod(pod_info)
        self._pods[uid] = _PodState(pod_info, node_name, assumed=True)

    def finish_binding(self, pod: Obj) -> None:
        """The binding was written: start the clock for the informer's confirmation."""
        state = self._pods.get(_uid(pod))
        if state is not None and state.assumed:
            state.binding_finished = True
            state.deadline = time.monotonic() + self.assumed_pod_ttl

    def forget_pod(self, pod: Obj) -> None:
        """The binding failed: take the assumed pod off its node."""
        state = self._pods.get(_uid(pod))
        if state is not None and state.assumed:
            self._remove(state)

    def is_assumed(self, pod: Obj) -> bool:
        state = self._pods.get(_uid(pod))
        return state is not None and state.assumed

    def add_pod(self, pod: Obj) -> None:
        """The informer reports a bound pod: confirm an assumption, or add it."""
        uid = _uid(pod)
        state = self._pods.get(uid)
        node = _node_of(pod)
        if state is not None and state.assumed and state.node_name == node:
            # The binding is confirmed: the pod's requests were parsed when it was assumed
            # (a pod's spec does not change when it is bound), so keep them.
            state.pod_info.pod = pod
            state.assumed = False
            return
        if state is not None:
            self._remove(state)
        pod_info = PodInfo.of(pod)
        self._node_info(node).add_pod(pod_info)
        self._pods[uid] = _PodState(pod_info, node)

    update_pod = add_pod

    def remove_pod(self, pod: Obj) -> None:
        state = self._pods.get(_uid(pod))
        if state is not None:
            self._remove(state)

    def _remove(self, state: _PodState) -> None:
        info = self._nodes.get(state.node_name)
        if info is not None:
            self._dirty.add(state.node_name)
            info.remove_pod(state.pod_info.pod)
            if not info.pods and "status" not in info.node:
                del self._nodes[state.node_name]
        self._pods.pop(state.pod_info.uid, None)

    def cleanup_expired_assumed_pods(self) -> list[PodInfo]:
        """Assumed pods whose binding finished but were never confirmed: drop them."""
        now = time.monotonic()
        expired = [s for s in self._pods.values() if s.assumed and s.binding_finished
                   and s.deadline is not None and s.deadline < now]
        for state in expired:
            self._remove(state)
        return [state.pod_info for state in expired]

    def pod_count(self) -> int:
        return len(self._pods)

    # -- snapshots -------------------------------------------------------------------------------

    def update_snapshot(self) -> Snapshot:
        """A snapshot of every real node. Only nodes that changed since the last snapshot
        are copied again; the others are the very same NodeInfo objects (plugins may
        remember per-node results by object, see NodeMemo). The image states are brought
        up to date from the nodes whose images changed, not counted again over every node
        (a Node's status is written again by its heartbeats, mostly with the same images)."""
        membership_changed = False
        copied: list[str] = []
        # images whose number of nodes changed, and nodes whose own images changed
        images_moved: set[str] = set()
        images_changed: list[str] = []
        for name in self._dirty:
            info = self._nodes.get(name)
            previous = self._snapshot_infos.get(name)
            if info is None or "status" not in info.node:  # gone, or only a placeholder
                if previous is not None:
                    del self._snapshot_infos[name]
                    del self._snapshot_by_name[name]
                    self._snapshot_with_affinity.pop(name, None)
                    self._snapshot_with_anti_affinity.pop(name, None)
                    membership_changed = True
                    copied.append(name)  # (the change log names the nodes removed too)
                    images_moved |= self._set_node_images(name, {})  # no longer count
                continue
            if previous is not None and previous[0] == info.generation:
                continue
            copy_ = info.clone()
            copied.append(name)
            if previous is None or previous[1].node_generation != info.node_generation:
                sizes = node_image_sizes(info.node)
                if previous is None or sizes != self._node_images.get(name):
                    images_moved |= self._set_node_images(name, sizes)
                    images_changed.append(name)
                else:  # the Node changed, but not its images
                    copy_.image_states = previous[1].image_states
            else:  # only its pods changed: the node's images are what they were
                copy_.image_states = previous[1].image_states
            if previous is None:
                membership_changed = True
            else:
                self._snapshot_list[self._snapshot_positions[name]] = copy_
            self._snapshot_infos[name] = (info.generation, copy_)
            self._snapshot_by_name[name] = copy_
            for index, has in ((self._snapshot_with_affinity, copy_.pods_with_affinity),
                               (self._snapshot_with_anti_affinity,
                                copy_.pods_with_required_anti_affinity)):
                if has:
                    index[name] = copy_
                else:
                    index.pop(name, None)
        self._dirty.clear()
        if membership_changed:
            # in the cache's order of nodes; at C speed when every node is in (no NodeInfo
            # is looked into: a Node made or deleted in a cluster of thousands is common)
            names = list(self._nodes) if len(self._nodes) == len(self._snapshot_by_name) \
                else [name for name in self._nodes if name in self._snapshot_by_name]
            self._snapshot_list = list(map(self._snapshot_by_name.__getitem__, names))
            self._snapshot_positions = dict(zip(names, range(len(names)), strict=True))
        if images_moved or images_changed:
            self._update_image_states(images_moved, images_changed)
        # The list is the cache's own, lent as the indexes are: copying thousands of
        # entries each cycle cost more than all else the snapshot does. A changed node is
        # replaced in it in place by the next update_snapshot, as upstream updates its one
        # Snapshot: a snapshot serves the scheduling cycle it was made for.
        snapshot = Snapshot(namespace_labels=self.namespace_labels)
        snapshot.node_info_list = self._snapshot_list
        snapshot.image_spread = self._image_spread
        snapshot.changes = self._changes
        snapshot.seq = self._changes.record(copied, membership_changed)
        snapshot.lend_indexes(self._snapshot_by_name, self._snapshot_with_affinity,
                              self._snapshot_with_anti_affinity)
        return snapshot

    def _set_node_images(self, name: str, sizes: dict[str, int]) -> set[str]:
        """The node now holds these images (none: it left the snapshot); the images it
        gained or lost, whose number of nodes changed."""
        old = self._node_images.pop(name, {})
        if sizes:
            self._node_images[name] = sizes
        moved = old.keys() ^ sizes.keys()
        for image in moved:
            holders = self._image_nodes.setdefault(image, set())
            if image in sizes:
                holders.add(name)
            else:
                holders.discard(name)
                if not holders:
                    del self._image_nodes[image]
        return moved

    def _update_image_states(self, moved: set[str], changed: list[str]) -> None:
        """ImageStateSummary, kept up to date: each image's size on a node and on how many
        nodes it is, on the nodes whose images changed and on every node holding an image
        whose number of nodes changed (as Snapshot.fill_image_states would find them)."""
        if moved:
            self._image_spread = {image: len(holders)
                                  for image, holders in self._image_nodes.items()}
        spread = self._image_spread
        names = set(changed)
        for image in moved:
            names.update(self._image_nodes.get(image, ()))
        for name in names:
            info = self._snapshot_by_name.get(name)
            if info is not None:
                info.image_states = {image: (size, spread[image])
                                     for image, size in self._node_images.get(name, {}).items()}
