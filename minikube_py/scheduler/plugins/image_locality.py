"""ImageLocality (upstream plugins/imagelocality): prefer nodes that already hold the
pod's images, so it starts without pulling them."""

from __future__ import annotations

from dataclasses import dataclass

from minikube_py.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SUCCESS,
    ClusterEvent,
    CycleState,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo, normalized_image_name

# 90% of the images on Docker Hub are between these sizes: below the minimum an image is
# not worth moving a pod for; the maximum is per image the pod uses.
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB

_PRE_SCORE_STATE_KEY = "PreScoreImageLocality"


@dataclass(slots=True)
class _ImageState:
    """What PreScore computes once per pod."""

    images: list[str]  # normalized names: init containers, containers, image volumes
    total_nodes: int
    on_some_node: bool  # False: no node has any of them, every node scores 0


def pod_images(pod: PodInfo) -> list[str]:
    """Every image the pod needs: its init containers', containers' and image volumes'."""
    spec = pod.pod.get("spec") or {}
    names = [c.get("image", "") for c in spec.get("initContainers") or []]
    names += [c.get("image", "") for c in spec.get("containers") or []]
    names += [v["image"].get("reference", "") for v in spec.get("volumes") or [] if v.get("image")]
    return [normalized_image_name(name) for name in names]


def calculate_priority(sum_scores: int, image_count: int) -> int:
    """calculatePriority: the summed image scores, clamped to [23MB, 1000MB x images],
    mapped onto 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * image_count
    clamped = max(MIN_THRESHOLD, min(sum_scores, max_threshold))
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class ImageLocality(PreScorePlugin, ScorePlugin):
    """Score: the size of the pod's images already on the node, each scaled by the share
    of nodes that have it (so one node holding a rare image does not draw every pod)."""

    name = "ImageLocality"

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        """The pod's normalized image names, and how many nodes the cluster has (all of
        them, not only those that passed the filters)."""
        if self.handle is None:
            return Status.error("ImageLocality needs the framework handle to count the nodes")
        snapshot = self.handle.snapshot()
        images = pod_images(pod)
        spread = snapshot.image_spread
        on_some_node = spread is None or any(name in spread for name in images)
        state.write(_PRE_SCORE_STATE_KEY, _ImageState(images, len(snapshot), on_some_node))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        """sumImageScores, then calculatePriority."""
        images: _ImageState = state.read(_PRE_SCORE_STATE_KEY)
        total = 0
        for name in images.images:
            present = node_info.image_states.get(name)
            if present is not None:
                size, num_nodes = present
                total += int(size * (num_nodes / images.total_nodes))
        return calculate_priority(total, len(images.images)), SUCCESS

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                    ) -> tuple[list[int], Status]:
        """Score for many nodes: a node holding none of the pod's images scores 0."""
        images: _ImageState = state.read(_PRE_SCORE_STATE_KEY)
        if not images.on_some_node:
            return [0] * len(nodes), SUCCESS
        return [self.score(state, pod, info)[0]
                if info.image_states and any(name in info.image_states for name in images.images)
                else 0 for info in nodes], SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        """None: a score plugin never rejects a pod."""
        return []
