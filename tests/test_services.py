"""Service cluster IPs and node ports, allocated by the API server as upstream's service storage.

Every test shares one API server and so one IP range and one node port range: no test may
assume which random value it gets, and values asked for by number are picked among the
free ones of the range's static part (the part random allocation avoids).
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from minikube_py.apiserver.storage.etcd import EtcdClient, prefix_end
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from tests.api_helpers import API

SERVICE_RANGE = ipaddress.ip_network("10.96.0.0/12")
STATIC_IPS = [str(SERVICE_RANGE[i]) for i in range(2, 257)]  # random allocation avoids these
STATIC_PORTS = list(range(30000, 30086))
IP_KEYS = "/registry/ipaddresses/"
PORT_KEYS = "/registry/servicenodeports/"

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
async def api(apiserver: APIServerProcess) -> AsyncIterator[API]:
    async with aiohttp.ClientSession() as session:
        yield API(session, apiserver.url)


def service(name: str, kind: str = "ClusterIP", *, cluster_ip: str | None = None,
            node_port: int | None = None, **spec: Any) -> dict[str, Any]:
    port: dict[str, Any] = {"port": 80, "targetPort": 8080}
    if node_port is not None:
        port["nodePort"] = node_port
    body: dict[str, Any] = {"type": kind, "selector": {"app": name}, "ports": [port], **spec}
    if cluster_ip is not None:
        body["clusterIP"] = cluster_ip
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


def services_path(namespace: str, name: str = "") -> str:
    path = f"/api/v1/namespaces/{namespace}/services"
    return f"{path}/{name}" if name else path


async def owner_of(etcd: EtcdClient, prefix: str, value: object) -> str | None:
    """`namespace/name` of the service an allocation key names, None if it is free."""
    kv = await etcd.get(f"{prefix}{value}".encode())
    if kv is None:
        return None
    ref = orjson.loads(kv.value)["spec"]["parentRef"]
    return f"{ref['namespace']}/{ref['name']}"


async def taken(etcd: EtcdClient, prefix: str) -> set[str]:
    result = await etcd.range(prefix.encode(), prefix_end(prefix.encode()), keys_only=True)
    return {kv.key.decode()[len(prefix):] for kv in result.kvs}


async def free_ip(etcd: EtcdClient) -> str:
    return random.choice(sorted(set(STATIC_IPS) - await taken(etcd, IP_KEYS)))


async def free_port(etcd: EtcdClient) -> int:
    used = await taken(etcd, PORT_KEYS)
    return random.choice([port for port in STATIC_PORTS if str(port) not in used])


# -- cluster IPs --------------------------------------------------------------------------------

async def test_every_service_gets_its_own_cluster_ip_from_the_range(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    answers = await asyncio.gather(*(
        api.post(services_path(namespace), service(f"svc-{i}")) for i in range(20)))
    assert [code for code, _ in answers] == [201] * 20
    ips = [body["spec"]["clusterIP"] for _, body in answers]
    assert len(set(ips)) == 20
    for (_, body), ip in zip(answers, ips, strict=True):
        spec = body["spec"]
        assert ipaddress.ip_address(ip) in SERVICE_RANGE and ip != "10.96.0.1"
        assert spec["clusterIPs"] == [ip]
        assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
        assert await owner_of(etcd_client, IP_KEYS, ip) == f"{namespace}/{body['metadata']['name']}"
    code, read = await api.get(services_path(namespace, "svc-0"))
    assert (code, read["spec"]["clusterIP"]) == (200, ips[0])


async def test_a_requested_cluster_ip_is_honoured(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    ip = await free_ip(etcd_client)
    code, body = await api.post(services_path(namespace), service("web", cluster_ip=ip))
    assert code == 201, body
    assert (body["spec"]["clusterIP"], body["spec"]["clusterIPs"]) == (ip, [ip])
    assert await owner_of(etcd_client, IP_KEYS, ip) == f"{namespace}/web"


async def test_a_cluster_ip_in_use_is_refused_and_nothing_is_stored(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    ip = await free_ip(etcd_client)
    assert (await api.post(services_path(namespace), service("first", cluster_ip=ip)))[0] == 201
    code, status = await api.post(services_path(namespace), service("second", cluster_ip=ip))
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        f'Service "second" is invalid: spec.clusterIPs: Invalid value: []string{{"{ip}"}}: '
        f"failed to allocate IP {ip}: provided IP is already allocated")
    assert (await api.get(services_path(namespace, "second")))[0] == 404
    assert await owner_of(etcd_client, IP_KEYS, ip) == f"{namespace}/first"


@pytest.mark.parametrize("ip", ["192.168.0.10", "10.96.0.0", "10.111.255.255"])
async def test_a_cluster_ip_outside_the_range_is_refused(
        api: API, namespace: str, etcd_client: EtcdClient, ip: str) -> None:
    code, status = await api.post(services_path(namespace), service("web", cluster_ip=ip))
    assert code == 422
    assert status["message"] == (
        f'Service "web" is invalid: spec.clusterIPs: Invalid value: []string{{"{ip}"}}: '
        f"failed to allocate IP {ip}: provided IP is not in the valid range. "
        "The range of valid IPs is 10.96.0.0/12")
    assert await owner_of(etcd_client, IP_KEYS, ip) is None


async def test_a_headless_service_gets_no_cluster_ip(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    before = await taken(etcd_client, IP_KEYS)
    code, body = await api.post(services_path(namespace), service("db", cluster_ip="None"))
    assert code == 201, body
    assert (body["spec"]["clusterIP"], body["spec"]["clusterIPs"]) == ("None", ["None"])
    assert await taken(etcd_client, IP_KEYS) <= before


async def test_an_external_name_service_gets_no_cluster_ip(api: API, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
            "spec": {"type": "ExternalName", "externalName": "db.example.com"}}
    code, created = await api.post(services_path(namespace), body)
    assert code == 201, created
    assert "clusterIP" not in created["spec"] and "clusterIPs" not in created["spec"]


async def test_a_dual_stack_service_is_refused_on_this_single_stack_cluster(
        api: API, namespace: str) -> None:
    code, status = await api.post(services_path(namespace),
                                  service("web", ipFamilyPolicy="RequireDualStack"))
    assert code == 422
    assert status["message"] == (
        'Service "web" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": '
        "this cluster is not configured for dual-stack services")


async def test_the_cluster_ip_never_changes(api: API, namespace: str) -> None:
    _, created = await api.post(services_path(namespace), service("web"))
    ip = created["spec"]["clusterIP"]
    code, updated = await api.patch(services_path(namespace, "web"),
                                    {"spec": {"ports": [{"port": 8000, "targetPort": 80}]}})
    assert (code, updated["spec"]["clusterIP"]) == (200, ip)
    updated["spec"]["clusterIP"] = updated["spec"]["clusterIPs"][0] = STATIC_IPS[-1]
    code, status = await api.put(services_path(namespace, "web"), updated)
    assert (code, status["reason"]) == (422, "Invalid")
    assert "may not change once set" in status["message"]


async def test_deleting_a_service_frees_its_cluster_ip(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    ip = await free_ip(etcd_client)
    assert (await api.post(services_path(namespace), service("old", cluster_ip=ip)))[0] == 201
    assert (await api.delete(services_path(namespace, "old")))[0] == 200
    assert await owner_of(etcd_client, IP_KEYS, ip) is None
    code, body = await api.post(services_path(namespace), service("new", cluster_ip=ip))
    assert (code, body["spec"]["clusterIP"]) == (201, ip)


async def test_a_dry_run_create_reserves_nothing(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    ip = await free_ip(etcd_client)
    code, body = await api.post(services_path(namespace) + "?dryRun=All",
                                service("web", "NodePort", cluster_ip=ip))
    assert code == 201, body
    assert body["spec"]["clusterIP"] == ip
    assert body["spec"]["ports"][0]["nodePort"] in range(30000, 32768)
    assert await owner_of(etcd_client, IP_KEYS, ip) is None
    assert await owner_of(etcd_client, PORT_KEYS, body["spec"]["ports"][0]["nodePort"]) is None


async def test_the_kubernetes_service_has_the_first_ip_of_the_range(
        api: API, etcd_client: EtcdClient) -> None:
    async with asyncio.timeout(60):
        while (answer := await api.get(services_path("default", "kubernetes")))[0] == 404:
            await asyncio.sleep(0.1)
    code, body = answer
    assert code == 200
    assert body["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert (body["spec"]["type"], body["spec"]["clusterIP"]) == ("ClusterIP", "10.96.0.1")
    [port] = body["spec"]["ports"]
    assert (port["name"], port["port"], port["protocol"]) == ("https", 443, "TCP")
    assert isinstance(port["targetPort"], int)
    assert await owner_of(etcd_client, IP_KEYS, "10.96.0.1") == "default/kubernetes"


# -- node ports ---------------------------------------------------------------------------------

async def test_a_node_port_service_gets_a_node_port_from_the_range(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    code, body = await api.post(services_path(namespace), service("web", "NodePort"))
    assert code == 201, body
    node_port = body["spec"]["ports"][0]["nodePort"]
    assert node_port in range(30000, 32768)
    assert ipaddress.ip_address(body["spec"]["clusterIP"]) in SERVICE_RANGE
    assert await owner_of(etcd_client, PORT_KEYS, node_port) == f"{namespace}/web"


async def test_a_requested_node_port_is_honoured_and_then_refused_to_others(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    port = await free_port(etcd_client)
    code, body = await api.post(services_path(namespace), service("a", "NodePort", node_port=port))
    assert (code, body["spec"]["ports"][0]["nodePort"]) == (201, port)
    code, status = await api.post(services_path(namespace),
                                  service("b", "NodePort", node_port=port))
    assert (code, status["message"]) == (422, (
        f'Service "b" is invalid: spec.ports[0].nodePort: Invalid value: {port}: '
        "provided port is already allocated"))
    assert await owner_of(etcd_client, PORT_KEYS, port) == f"{namespace}/a"


async def test_a_node_port_outside_the_range_is_refused(api: API, namespace: str) -> None:
    code, status = await api.post(services_path(namespace),
                                  service("web", "NodePort", node_port=8080))
    assert (code, status["message"]) == (422, (
        'Service "web" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port '
        "is not in the valid range. The range of valid ports is 30000-32767"))


async def test_tcp_and_udp_of_one_port_share_a_node_port(api: API, namespace: str) -> None:
    body = service("dns", "NodePort")
    body["spec"]["ports"] = [{"name": "tcp", "port": 53, "protocol": "TCP"},
                             {"name": "udp", "port": 53, "protocol": "UDP"}]
    code, created = await api.post(services_path(namespace), body)
    assert code == 201, created
    tcp, udp = (port["nodePort"] for port in created["spec"]["ports"])
    assert tcp == udp


async def test_a_local_load_balancer_gets_a_health_check_node_port(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    code, body = await api.post(services_path(namespace),
                                service("lb", "LoadBalancer", externalTrafficPolicy="Local"))
    assert code == 201, body
    health = body["spec"]["healthCheckNodePort"]
    assert health in range(30000, 32768) and health != body["spec"]["ports"][0]["nodePort"]
    assert await owner_of(etcd_client, PORT_KEYS, health) == f"{namespace}/lb"


async def test_changing_to_cluster_ip_frees_the_node_port(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    port = await free_port(etcd_client)
    await api.post(services_path(namespace), service("web", "NodePort", node_port=port))
    code, body = await api.patch(services_path(namespace, "web"), {"spec": {"type": "ClusterIP"}})
    assert code == 200, body
    assert "nodePort" not in body["spec"]["ports"][0]
    assert await owner_of(etcd_client, PORT_KEYS, port) is None
    code, _ = await api.post(services_path(namespace), service("next", "NodePort", node_port=port))
    assert code == 201


async def test_changing_to_node_port_allocates_one(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    _, created = await api.post(services_path(namespace), service("web"))
    code, body = await api.patch(services_path(namespace, "web"), {"spec": {"type": "NodePort"}})
    assert code == 200, body
    assert body["spec"]["clusterIP"] == created["spec"]["clusterIP"]
    node_port = body["spec"]["ports"][0]["nodePort"]
    assert await owner_of(etcd_client, PORT_KEYS, node_port) == f"{namespace}/web"


async def test_changing_to_external_name_frees_the_cluster_ip(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    _, created = await api.post(services_path(namespace), service("web"))
    code, body = await api.patch(services_path(namespace, "web"), {
        "spec": {"type": "ExternalName", "externalName": "web.example.com",
                 "selector": None}})
    assert code == 200, body
    assert "clusterIP" not in body["spec"]
    assert await owner_of(etcd_client, IP_KEYS, created["spec"]["clusterIP"]) is None


# -- a rejected create writes nothing ----------------------------------------------------------

@pytest.mark.parametrize(("spoil", "expected_code"), [
    ("taken node port", 422), ("invalid field", 422), ("no namespace", 404), ("name in use", 409),
])
async def test_a_rejected_create_writes_nothing_to_etcd(
        api: API, namespace: str, etcd_client: EtcdClient, spoil: str, expected_code: int) -> None:
    ip, port = await free_ip(etcd_client), await free_port(etcd_client)
    ports_before = await taken(etcd_client, PORT_KEYS)
    body = service("web", "NodePort", cluster_ip=ip)
    body["spec"]["ports"].append({"name": "other", "port": 81, "nodePort": port})
    body["spec"]["ports"][0]["name"] = "http"
    target = namespace
    if spoil == "taken node port":
        await api.post(services_path(namespace), service("holder", "NodePort", node_port=port))
        ports_before = await taken(etcd_client, PORT_KEYS)
    elif spoil == "invalid field":
        body["spec"]["sessionAffinity"] = "Sometimes"
    elif spoil == "name in use":
        await api.post(services_path(namespace), service("web"))
        ports_before = await taken(etcd_client, PORT_KEYS)
    else:
        target = f"{namespace}-missing"
    revision = await etcd_client.current_revision()
    code, status = await api.post(services_path(target), body)
    assert code == expected_code, status
    assert await etcd_client.current_revision() == revision
    assert await owner_of(etcd_client, IP_KEYS, ip) is None
    assert await taken(etcd_client, PORT_KEYS) == ports_before


# -- kubectl ------------------------------------------------------------------------------------

def test_kubectl_get_services_shows_cluster_ips_and_node_ports(
        kubectl: Kubectl, namespace: str) -> None:
    kubectl("create", "service", "clusterip", "web", "--tcp=80:8080", "-n", namespace)
    kubectl("create", "service", "nodeport", "edge", "--tcp=80:8080", "-n", namespace)
    lines = kubectl("get", "services", "-n", namespace).stdout.splitlines()
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    web = orjson.loads(kubectl("get", "service", "web", "-n", namespace, "-o", "json").stdout)
    edge = orjson.loads(kubectl("get", "service", "edge", "-n", namespace, "-o", "json").stdout)
    assert rows["web"][1:5] == ["ClusterIP", web["spec"]["clusterIP"], "<none>", "80/TCP"]
    node_port = edge["spec"]["ports"][0]["nodePort"]
    assert rows["edge"][1:5] == ["NodePort", edge["spec"]["clusterIP"], "<none>",
                                 f"80:{node_port}/TCP"]


# -- repair -------------------------------------------------------------------------------------

def allocation(name: str, namespace: str, service_name: str, created: str) -> bytes:
    return orjson.dumps({
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {"parentRef": {"group": "", "resource": "services", "namespace": namespace,
                               "name": service_name}}})


@pytest.mark.slow
async def test_starting_the_api_server_repairs_leaked_and_missing_allocations(
        private_etcd: EtcdProcess, fast_tmp: Path) -> None:
    stored = {"apiVersion": "v1", "kind": "Service",
              "metadata": {"name": "kept", "namespace": "prod", "uid": "u1"},
              "spec": {"type": "NodePort", "clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.20"],
                       "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30020}]}}
    async with private_etcd.client() as etcd:
        await etcd.create(b"/registry/services/prod/kept", orjson.dumps(stored))
        # The API server stopped between allocating and creating: nobody holds these.
        await etcd.create(b"/registry/ipaddresses/10.96.0.30",
                          allocation("10.96.0.30", "prod", "gone", "2020-01-01T00:00:00Z"))
        await etcd.create(b"/registry/servicenodeports/30030",
                          allocation("30030", "prod", "kept", "2020-01-01T00:00:00Z"))
        # Just allocated by a create that may still be under way: kept for now.
        await etcd.create(b"/registry/ipaddresses/10.96.0.40",
                          allocation("10.96.0.40", "prod", "coming", "2999-01-01T00:00:00Z"))
        async with APIServerProcess([private_etcd.client_url], fast_tmp / "apiserver-repair.log"):
            async with asyncio.timeout(60):
                # the repair of cluster IPs and of node ports run one after the other
                while (await owner_of(etcd, IP_KEYS, "10.96.0.20") is None
                       or await owner_of(etcd, IP_KEYS, "10.96.0.1") is None
                       or await owner_of(etcd, PORT_KEYS, 30020) is None):
                    await asyncio.sleep(0.1)
            assert await owner_of(etcd, IP_KEYS, "10.96.0.20") == "prod/kept"
            assert await owner_of(etcd, PORT_KEYS, 30020) == "prod/kept"
            assert await owner_of(etcd, IP_KEYS, "10.96.0.30") is None
            assert await owner_of(etcd, PORT_KEYS, 30030) is None
            assert await owner_of(etcd, IP_KEYS, "10.96.0.40") == "prod/coming"
            assert await owner_of(etcd, IP_KEYS, "10.96.0.1") == "default/kubernetes"


@pytest.mark.slow
async def test_starting_the_api_server_puts_back_the_kubernetes_objects_it_owns(
        private_etcd: EtcdProcess, fast_tmp: Path) -> None:
    """The kubernetes Service's ports, and its Endpoints' and EndpointSlice's addresses and
    ports, are this server's again; the fields it does not own are kept."""
    stale_ports = [{"name": "https", "port": 1, "protocol": "TCP"}]
    stale = {
        "/registry/services/default/kubernetes": {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default", "uid": "u1",
                         "labels": {"mine": "kept"}},
            "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                     "sessionAffinity": "None",
                     "ports": [{**stale_ports[0], "port": 443, "targetPort": 1}]}},
        "/registry/endpoints/default/kubernetes": {
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "kubernetes", "namespace": "default", "uid": "u2",
                         "labels": {"mine": "kept"}},
            "subsets": [{"addresses": [{"ip": "10.9.9.9"}], "ports": stale_ports}]},
        "/registry/endpointslices/default/kubernetes": {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "kubernetes", "namespace": "default", "uid": "u3",
                         "labels": {"kubernetes.io/service-name": "kubernetes",
                                    "mine": "kept"}},
            "addressType": "IPv4", "ports": stale_ports,
            "endpoints": [{"addresses": ["10.9.9.9"], "conditions": {"ready": True}}]},
    }
    advertised = "10.250.0.7"
    async with private_etcd.client() as etcd:
        for key, obj in stale.items():
            await etcd.create(key.encode(), orjson.dumps(obj))
        process = APIServerProcess([private_etcd.client_url], fast_tmp / "apiserver-own.log",
                                   extra_args=(f"--advertise-address={advertised}",))
        async with process, aiohttp.ClientSession() as session:
            api = API(session, process.url)
            paths = ("/api/v1/namespaces/default/services/kubernetes",
                     "/api/v1/namespaces/default/endpoints/kubernetes",
                     "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes")
            port = {"name": "https", "port": process.port, "protocol": "TCP"}

            async def put_back() -> list[Any]:
                service, endpoints, endpoint_slice = [(await api.get(path))[1] for path in paths]
                return [service["spec"]["ports"], endpoints["subsets"],
                        (endpoint_slice["endpoints"], endpoint_slice["ports"])]

            wanted = [[{"name": "https", "port": 443, "protocol": "TCP",
                        "targetPort": process.port}],
                      [{"addresses": [{"ip": advertised}], "ports": [port]}],
                      ([{"addresses": [advertised], "conditions": {"ready": True}}], [port])]
            async with asyncio.timeout(10):
                while await put_back() != wanted:
                    await asyncio.sleep(0.1)
            for path in paths:
                assert (await api.get(path))[1]["metadata"]["labels"]["mine"] == "kept"
