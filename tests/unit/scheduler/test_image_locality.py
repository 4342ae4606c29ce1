"""ImageLocality prefers nodes that already hold the pod's images, scaled by how widely
each image has spread."""

from __future__ import annotations

import pytest

from minikube_py.api import Obj
from minikube_py.scheduler.framework.interface import CycleState
from minikube_py.scheduler.framework.types import PodInfo, Snapshot
from minikube_py.scheduler.plugins.image_locality import (
    MB,
    ImageLocality,
    calculate_priority,
    pod_images,
)


class FakeHandle:
    """Just enough of the framework handle: the cycle's snapshot."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def snapshot(self) -> Snapshot:
        return self._snapshot


def node(name: str, *images: tuple[str, int]) -> Obj:
    return {"metadata": {"name": name},
            "status": {"images": [{"names": [image], "sizeBytes": size * MB}
                                  for image, size in images]}}


def pod(*images: str, init: tuple[str, ...] = (), volumes: tuple[str, ...] = ()) -> PodInfo:
    return PodInfo.of({"metadata": {"name": "p", "namespace": "default"}, "spec": {
        "containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)],
        "initContainers": [{"name": f"i{i}", "image": image} for i, image in enumerate(init)],
        "volumes": [{"name": f"v{i}", "image": {"reference": reference}}
                    for i, reference in enumerate(volumes)]}})


def scores(pod_info: PodInfo, nodes: list[Obj]) -> dict[str, int]:
    snapshot = Snapshot.of(nodes)
    plugin, state = ImageLocality(handle=FakeHandle(snapshot)), CycleState()
    assert plugin.pre_score(state, pod_info, snapshot.node_info_list).is_success()
    result = {}
    for info in snapshot.node_info_list:
        score, status = plugin.score(state, pod_info, info)
        assert status.is_success()
        result[info.name] = score
    assert plugin.normalize_score(state, pod_info, result) is None
    return result


NODE_40_300_2000 = node("node1", ("gcr.io/40:latest", 40), ("gcr.io/300:latest", 300),
                        ("gcr.io/2000:latest", 2000))
NODE_250_10 = node("node2", ("gcr.io/250:latest", 250), ("gcr.io/10:latest", 10))
NODE_600_40_900 = node("node1", ("gcr.io/600:latest", 600), ("gcr.io/40:latest", 40),
                       ("gcr.io/900:latest", 900))
NODE_300_600_900 = node("node2", ("gcr.io/300:latest", 300), ("gcr.io/600:latest", 600),
                        ("gcr.io/900:latest", 900))


# Upstream TestImageLocalityPriority (imagelocality/image_locality_test.go).
@pytest.mark.parametrize(("pod_info", "nodes", "expected"), [
    # two images spread on two nodes, prefer the larger image one:
    # node1: 40MB x 1/2 = 20MB, below 23MB -> 0; node2: 250MB x 1/2 = 125MB -> 5
    (pod("gcr.io/40", "gcr.io/250"), [NODE_40_300_2000, NODE_250_10],
     {"node1": 0, "node2": 5}),
    # images on both nodes count fully, the one on a single node by half:
    # node1: 600 + 900 = 1500MB -> 49; node2: 300 x 1/2 + 600 + 900 = 1650MB -> 54
    (pod("gcr.io/300", "gcr.io/600", "gcr.io/900"), [NODE_600_40_900, NODE_300_600_900],
     {"node1": 49, "node2": 54}),
    # an image larger than the per-container maximum is capped: 2000MB x 1/2 > 1000MB
    (pod("gcr.io/2000"), [NODE_40_300_2000, NODE_250_10], {"node1": 100, "node2": 0}),
    # init containers count: 300MB x 1/2 = 150MB of 2000MB -> 6
    (pod("gcr.io/10", init=("gcr.io/300",)), [NODE_40_300_2000, NODE_250_10],
     {"node1": 6, "node2": 0}),
])
def test_score_sums_present_images_scaled_by_their_spread(
        pod_info: PodInfo, nodes: list[Obj], expected: dict[str, int]) -> None:
    assert scores(pod_info, nodes) == expected


def test_image_volumes_count_in_the_score_and_in_the_maximum() -> None:
    """kubernetes/kubernetes#138951: an image volume raises the maximum like a container."""
    nodes = [node("node1", ("registry/data:v1", 1000))]
    # 1000MB present, two images: 100 x (1000 - 23) / (2000 - 23) = 49
    assert scores(pod("registry/app:v1", volumes=("registry/data:v1",)), nodes) == {"node1": 49}


def test_image_names_without_a_tag_mean_latest() -> None:
    assert pod_images(pod("nginx", "gcr.io/pause:3.9", "busybox@sha256:abc")) == [
        "nginx:latest", "gcr.io/pause:3.9", "busybox@sha256:abc"]


@pytest.mark.parametrize(("sum_scores", "images", "expected"), [
    (0, 1, 0), (23 * MB, 1, 0), (1000 * MB, 1, 100), (5000 * MB, 1, 100),
    (1000 * MB, 2, 49), (0, 0, 0),
])
def test_priority_maps_the_clamped_sum_onto_0_to_100(
        sum_scores: int, images: int, expected: int) -> None:
    assert calculate_priority(sum_scores, images) == expected
