"""QoS class, CPU shares and quota, memory limit and OOM score as the kubelet computes them."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.kubelet.resources import (
    ContainerResources,
    compute_qos_class,
    container_resources,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    oom_score_adj,
    pod_memory_limit,
    qos_class,
)

GI = 1024**3


def container(name: str = "app", requests: Obj | None = None, limits: Obj | None = None,
              **extra: Any) -> Obj:
    resources = {key: value for key, value in (("requests", requests), ("limits", limits))
                 if value is not None}
    return {"name": name, "resources": resources, **extra}


def pod(*containers: Obj, init: tuple[Obj, ...] = (), **spec: Any) -> Obj:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"containers": list(containers), "initContainers": list(init), **spec}}


BOTH = {"cpu": "500m", "memory": "256Mi"}


@pytest.mark.parametrize(("containers", "init", "expected"), [
    ([container()], (), "BestEffort"),
    ([container(requests={"cpu": "0", "memory": "0"})], (), "BestEffort"),
    ([container(requests={"storage": "1Gi"})], (), "BestEffort"),
    ([container(requests=BOTH, limits=BOTH)], (), "Guaranteed"),
    ([container(requests=BOTH, limits=BOTH), container("b", requests=BOTH, limits=BOTH)], (),
     "Guaranteed"),
    ([container(requests={"cpu": "1"})], (), "Burstable"),
    ([container(requests=BOTH, limits={"cpu": "1", "memory": "256Mi"})], (), "Burstable"),
    ([container(requests=BOTH, limits=BOTH), container("b")], (), "Burstable"),
    ([container(limits={"cpu": "1"}, requests={"cpu": "1"})], (), "Burstable"),
    ([container(requests=BOTH, limits=BOTH)], (container("init"),), "Burstable"),
    ([container()], (container("init", requests={"memory": "1Mi"}),), "Burstable"),
    ([container(requests=BOTH, limits=BOTH)],
     (container("init", requests=BOTH, limits=BOTH),), "Guaranteed"),
])
def test_qos_class_follows_compute_pod_qos(containers: list[Obj], init: tuple[Obj, ...],
                                           expected: str) -> None:
    assert compute_qos_class(pod(*containers, init=init)) == expected


def test_qos_class_prefers_the_class_the_api_server_recorded() -> None:
    recorded = {**pod(container()), "status": {"qosClass": "Burstable"}}
    assert qos_class(recorded) == "Burstable"
    assert qos_class(pod(container())) == "BestEffort"


@pytest.mark.parametrize(("milli", "shares"), [
    (0, 2), (1, 2), (100, 102), (250, 256), (1000, 1024), (2500, 2560), (300_000, 262144)])
def test_milli_cpu_to_shares(milli: int, shares: int) -> None:
    assert milli_cpu_to_shares(milli) == shares


@pytest.mark.parametrize(("milli", "quota"), [(0, 0), (1, 1000), (5, 1000), (250, 25000),
                                              (1500, 150000)])
def test_milli_cpu_to_quota_has_a_1ms_minimum(milli: int, quota: int) -> None:
    assert milli_cpu_to_quota(milli) == quota


@pytest.mark.parametrize(("requests", "limits", "shares", "quota", "memory"), [
    (None, None, 2, 0, 0),
    ({"cpu": "100m"}, None, 102, 0, 0),
    ({"cpu": "1"}, {"cpu": "2", "memory": "128Mi"}, 1024, 200000, 128 * 1024**2),
    (None, {"cpu": "500m"}, 512, 50000, 0),
    ({"cpu": "1m"}, {"cpu": "1m"}, 2, 1000, 0),
    ({"memory": "1Gi"}, {"memory": "1.5Gi"}, 2, 0, 3 * GI // 2),
])
def test_container_resources_for_cri(requests: Obj | None, limits: Obj | None, shares: int,
                                     quota: int, memory: int) -> None:
    app = container(requests=requests, limits=limits)
    resources = container_resources(pod(app), app, 8 * GI)
    assert (resources.cpu_shares, resources.cpu_quota, resources.cpu_period,
            resources.memory_limit_in_bytes) == (shares, quota, 100000, memory)


def test_container_resources_carry_the_oom_score() -> None:
    app = container(requests=BOTH, limits=BOTH)
    assert container_resources(pod(app), app, 8 * GI) == ContainerResources(
        cpu_shares=512, cpu_quota=50000, cpu_period=100000,
        memory_limit_in_bytes=256 * 1024**2, oom_score_adj=-997)


@pytest.mark.parametrize(("memory_request", "expected"), [
    (None, 999),          # 1000 would tie BestEffort
    ("1Gi", 875),         # 1000 - 1000 * 1/8
    ("4Gi", 500),
    ("8Gi", 3),           # never as low as Guaranteed
    ("16Gi", 3),
    ("1", 999),
])
def test_burstable_oom_score_scales_with_the_memory_request(memory_request: str | None,
                                                            expected: int) -> None:
    requests = {"cpu": "100m", **({"memory": memory_request} if memory_request else {})}
    app = container(requests=requests)
    assert oom_score_adj(pod(app), app, 8 * GI) == expected


@pytest.mark.parametrize(("qos_pod", "expected"), [
    (pod(container(requests=BOTH, limits=BOTH)), -997),
    (pod(container()), 1000),
    (pod(container(), priorityClassName="system-node-critical", priority=2_000_001_000), -997),
    (pod(container(), priorityClassName="system-node-critical", priority=100), 1000),
    (pod(container(), priorityClassName="system-cluster-critical", priority=2_000_000_000),
     1000),
])
def test_oom_score_by_qos_class_and_node_criticality(qos_pod: Obj, expected: int) -> None:
    assert oom_score_adj(qos_pod, qos_pod["spec"]["containers"][0], 8 * GI) == expected


def test_sidecar_scores_no_higher_than_the_smallest_regular_container() -> None:
    sidecar = container("proxy", requests={"memory": "64Mi"}, restartPolicy="Always")
    plain_init = container("setup", requests={"memory": "64Mi"})
    the_pod = pod(container(requests={"memory": "4Gi"}), container("b", requests={
        "memory": "2Gi"}), init=(sidecar, plain_init))
    assert oom_score_adj(the_pod, sidecar, 8 * GI) == 750
    assert oom_score_adj(the_pod, plain_init, 8 * GI) == 993


@pytest.mark.parametrize(("containers", "init", "expected"), [
    ([container(limits={"memory": "1Gi"}), container("b", limits={"memory": "2Gi"})], (),
     3 * GI),
    ([container(limits={"memory": "1Gi"}), container("b")], (), None),
    ([container(limits={"memory": "1Gi"})], (container("i", limits={"memory": "2Gi"}),),
     2 * GI),
])
def test_pod_memory_limit_needs_a_limit_on_every_container(containers: list[Obj],
                                                          init: tuple[Obj, ...],
                                                          expected: int | None) -> None:
    assert pod_memory_limit(pod(*containers, init=init)) == expected
