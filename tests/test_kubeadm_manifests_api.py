"""Every kubeadm-shaped object is one our API server accepts: each is created with
?dryRun=All (so the shared server keeps none of them), in kube-system as `up` will."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from minikube_py.api import Obj
from minikube_py.api.resources import by_kind
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.cli import CLUSTER_CIDR, CLUSTER_DNS, DEFAULT_PORTS, LOAD_BALANCER_RANGE
from minikube_py.cluster.kubeadm.addons import (
    Addons,
    addon_objects,
    local_path_provisioner_objects,
    trace_receiver_objects,
)
from minikube_py.cluster.kubeadm.controlplane import ControlPlane, HostPaths, static_pods
from tests.api_helpers import API

IMAGES = {name: f"localhost/minikube-py/{name}:v1.37.0-0123456789ab"
          for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                       "kube-proxy", "coredns", "metrics-server", "trace-receiver",
                       "local-path-provisioner")}


def objects() -> list[Obj]:
    plane = ControlPlane(advertise_address="172.18.0.1", ports=DEFAULT_PORTS, images=IMAGES,
                         tracing_endpoint="http://172.18.0.1:4318",
                         load_balancer_range=LOAD_BALANCER_RANGE)
    home = Path("/var/lib/minikube-py/control-plane")
    paths = HostPaths(pki=home / "pki", kubeconfigs=home / "kubeconfigs",
                      etcd_data=home / "etcd", tracing_config=home / "tracing.yaml")
    addons = Addons(server="https://172.18.0.1:6443", cluster_cidr=str(CLUSTER_CIDR),
                    cluster_dns=CLUSTER_DNS, images=IMAGES,
                    tracing_endpoint="http://172.18.0.1:4318")
    return [*static_pods(plane, paths), *addon_objects(addons), *trace_receiver_objects(addons),
            *local_path_provisioner_objects(addons, home / "nodes", ["control-plane", "node-1"])]


def collection(obj: Obj) -> str:
    resource = by_kind(obj["apiVersion"], obj["kind"])
    assert resource is not None, obj["kind"]
    prefix = f"/apis/{obj['apiVersion']}" if "/" in obj["apiVersion"] else "/api/v1"
    namespace = f"/namespaces/{obj['metadata']['namespace']}" if resource.namespaced else ""
    return f"{prefix}{namespace}/{resource.plural}"


@pytest.fixture
async def api(apiserver: APIServerProcess) -> AsyncIterator[API]:
    async with aiohttp.ClientSession() as session:
        yield API(session, apiserver.url)


@pytest.mark.parametrize("obj", objects(),
                         ids=lambda obj: f"{obj['kind']}/{obj['metadata']['name']}")
async def test_the_api_server_accepts_each_object(api: API, obj: Obj) -> None:
    status, body = await api.post(f"{collection(obj)}?dryRun=All", obj)
    assert status == 201, body
    assert body["metadata"]["name"] == obj["metadata"]["name"]
