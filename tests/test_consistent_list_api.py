"""Consistent lists from the watch cache, through the API with the official `kubernetes`
client: what a client just wrote is in the list it asks for next, the reads are counted
in apiserver_watch_cache_consistent_read_total, and --feature-gates turns them off."""

from __future__ import annotations

import re
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig


def consistent_reads(url: str, resource: str) -> dict[tuple[str, str], float]:
    """apiserver_watch_cache_consistent_read_total of one resource: (success, fallback)
    -> count."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    found = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_watch_cache_consistent_read_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
        if labels["resource"] == resource:
            found[(labels["success"], labels["fallback"])] = float(line.rsplit(" ", 1)[1])
    return found


@pytest.fixture
def v1(kubeconfig: Path) -> Iterator[client.CoreV1Api]:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.CoreV1Api(api)
    api.close()


def configmap(name: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"k": name})


def test_a_list_right_after_a_write_shows_it(v1: client.CoreV1Api, namespace: str,
                                             apiserver: APIServerProcess) -> None:
    before = consistent_reads(apiserver.url, "configmaps").get(("true", "false"), 0)
    expected: list[str] = []
    for i in range(60):
        name = f"cm-{i:03d}"
        v1.create_namespaced_config_map(namespace, configmap(name))
        expected.append(name)
        listed = v1.list_namespaced_config_map(namespace)
        assert [c.metadata.name for c in listed.items] == expected
        if i % 2 == 1:
            v1.delete_namespaced_config_map(expected.pop(0), namespace)
            listed = v1.list_namespaced_config_map(namespace)
            assert [c.metadata.name for c in listed.items] == expected
    reads = consistent_reads(apiserver.url, "configmaps")
    assert reads.get(("true", "false"), 0) > before
    assert ("false", "true") not in reads


def test_a_paged_list_starts_in_the_cache_and_continues_in_etcd(
        v1: client.CoreV1Api, namespace: str) -> None:
    names = [f"cm-{i}" for i in range(5)]
    for name in names:
        v1.create_namespaced_config_map(namespace, configmap(name))
    first = v1.list_namespaced_config_map(namespace, limit=2)
    assert first.metadata.remaining_item_count == 3
    seen = [c.metadata.name for c in first.items]
    token = first.metadata._continue
    while token:
        page = v1.list_namespaced_config_map(namespace, limit=2, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        seen += [c.metadata.name for c in page.items]
        token = page.metadata._continue
    assert seen == names


async def test_the_feature_gate_off_lists_from_etcd(etcd: EtcdProcess, fast_tmp: Path) -> None:
    name = f"gate-off-{uuid.uuid4().hex[:6]}"
    async with APIServerProcess(
            [etcd.client_url], fast_tmp / f"apiserver-{name}.log",
            extra_args=("--disable-admission-plugins=ServiceAccount",
                        "--feature-gates=ConsistentListFromCache=false")) as server:
        api = config.new_client_from_config(
            config_file=str(write_kubeconfig(fast_tmp / f"kubeconfig-{name}", server.url)))
        try:
            v1 = client.CoreV1Api(api)
            v1.create_namespaced_config_map("default", configmap(name))
            listed = v1.list_namespaced_config_map("default")
            assert name in [c.metadata.name for c in listed.items]
            v1.delete_namespaced_config_map(name, "default")
        finally:
            api.close()
        assert consistent_reads(server.url, "configmaps") == {}
