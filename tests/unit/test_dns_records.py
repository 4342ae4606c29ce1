"""The cluster's DNS records (records.py): what each kind of name answers."""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.dns.records import ClusterRecords, Record


def service(name: str, cluster_ip: str = "10.96.5.5", *, ports: list[Obj] | None = None,
            **spec: Any) -> Obj:
    body: Obj = {"clusterIP": cluster_ip, "ports": ports if ports is not None else [
        {"name": "http", "port": 80, "protocol": "TCP"}]}
    body.update(spec)
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": body}


def endpoint_slice(service_name: str, endpoints: list[Obj], *, name: str = "",
                   port: int = 8080) -> Obj:
    return {"metadata": {"name": name or f"{service_name}-abc", "namespace": "ns",
                         "labels": {"kubernetes.io/service-name": service_name}},
            "addressType": "IPv4", "endpoints": endpoints,
            "ports": [{"name": "http", "port": port, "protocol": "TCP"}]}


def test_cluster_ip_service_answers_its_cluster_ip() -> None:
    records = ClusterRecords()
    records.set_service(service("web"))
    answer = records.resolve("web.ns.svc.cluster.local.", "A")
    assert answer is not None and answer.rcode == "NOERROR"
    assert answer.records == [Record("web.ns.svc.cluster.local.", "A", "10.96.5.5")]


def test_names_are_case_insensitive() -> None:
    records = ClusterRecords()
    records.set_service(service("web"))
    answer = records.resolve("WEB.NS.svc.Cluster.Local.", "A")
    assert answer is not None and [r.data for r in answer.records] == ["10.96.5.5"]


def test_unknown_service_is_nxdomain_and_wrong_type_is_nodata() -> None:
    records = ClusterRecords()
    records.set_service(service("web"))
    missing = records.resolve("nope.ns.svc.cluster.local.", "A")
    assert missing is not None and missing.rcode == "NXDOMAIN"
    nodata = records.resolve("web.ns.svc.cluster.local.", "AAAA")
    assert nodata is not None and nodata.rcode == "NOERROR" and nodata.records == []


def test_headless_service_answers_ready_endpoints_and_each_hostname() -> None:
    records = ClusterRecords()
    records.set_service(service("db", "None"))
    records.set_slice(endpoint_slice("db", [
        {"addresses": ["10.244.1.5"], "hostname": "db-0", "conditions": {"ready": True}},
        {"addresses": ["10.244.2.6"], "hostname": "db-1"},
        {"addresses": ["10.244.3.7"], "conditions": {"ready": False}},
    ]))
    answer = records.resolve("db.ns.svc.cluster.local.", "A")
    assert answer is not None
    assert sorted(r.data for r in answer.records) == ["10.244.1.5", "10.244.2.6"]
    one = records.resolve("db-1.db.ns.svc.cluster.local.", "A")
    assert one is not None and [r.data for r in one.records] == ["10.244.2.6"]
    missing = records.resolve("db-9.db.ns.svc.cluster.local.", "A")
    assert missing is not None and missing.rcode == "NXDOMAIN"


def test_headless_endpoint_without_hostname_is_named_by_its_dashed_address() -> None:
    records = ClusterRecords()
    records.set_service(service("db", "None"))
    records.set_slice(endpoint_slice("db", [{"addresses": ["10.244.1.5"]}]))
    answer = records.resolve("10-244-1-5.db.ns.svc.cluster.local.", "A")
    assert answer is not None and [r.data for r in answer.records] == ["10.244.1.5"]


def test_publish_not_ready_addresses_includes_unready_endpoints() -> None:
    records = ClusterRecords()
    records.set_service(service("db", "None", publishNotReadyAddresses=True))
    records.set_slice(endpoint_slice("db", [
        {"addresses": ["10.244.3.7"], "conditions": {"ready": False}}]))
    answer = records.resolve("db.ns.svc.cluster.local.", "A")
    assert answer is not None and [r.data for r in answer.records] == ["10.244.3.7"]


def test_slices_seen_before_their_service_are_kept() -> None:
    records = ClusterRecords()
    records.set_slice(endpoint_slice("db", [{"addresses": ["10.244.1.5"]}]))
    records.set_service(service("db", "None"))
    answer = records.resolve("db.ns.svc.cluster.local.", "A")
    assert answer is not None and [r.data for r in answer.records] == ["10.244.1.5"]


def test_deleted_slice_and_service_disappear() -> None:
    records = ClusterRecords()
    records.set_service(service("db", "None"))
    slice_ = endpoint_slice("db", [{"addresses": ["10.244.1.5"]}])
    records.set_slice(slice_)
    records.delete_slice(slice_)
    gone = records.resolve("db.ns.svc.cluster.local.", "A")
    assert gone is not None and gone.rcode == "NXDOMAIN"
    records.set_service(service("web"))
    records.delete_service(service("web"))
    gone = records.resolve("web.ns.svc.cluster.local.", "A")
    assert gone is not None and gone.rcode == "NXDOMAIN"


def test_srv_of_a_cluster_ip_service_points_at_the_service() -> None:
    records = ClusterRecords()
    records.set_service(service("web", ports=[{"name": "http", "port": 80, "protocol": "TCP"},
                                              {"port": 81, "protocol": "TCP"}]))
    answer = records.resolve("_http._tcp.web.ns.svc.cluster.local.", "SRV")
    assert answer is not None
    assert answer.records == [Record("_http._tcp.web.ns.svc.cluster.local.", "SRV",
                                     (0, 100, 80, "web.ns.svc.cluster.local."))]
    assert answer.additional == [Record("web.ns.svc.cluster.local.", "A", "10.96.5.5")]
    wrong_proto = records.resolve("_http._udp.web.ns.svc.cluster.local.", "SRV")
    assert wrong_proto is not None and wrong_proto.rcode == "NXDOMAIN"


def test_srv_of_a_headless_service_lists_each_endpoint() -> None:
    records = ClusterRecords()
    records.set_service(service("db", "None"))
    records.set_slice(endpoint_slice("db", [
        {"addresses": ["10.244.1.5"], "hostname": "db-0"},
        {"addresses": ["10.244.2.6"], "hostname": "db-1"}], port=5432))
    answer = records.resolve("_http._tcp.db.ns.svc.cluster.local.", "SRV")
    assert answer is not None
    assert sorted(r.data for r in answer.records) == [
        (0, 50, 5432, "db-0.db.ns.svc.cluster.local."),
        (0, 50, 5432, "db-1.db.ns.svc.cluster.local.")]


def test_external_name_is_a_cname() -> None:
    records = ClusterRecords()
    records.set_service({"metadata": {"name": "ext", "namespace": "ns"},
                         "spec": {"type": "ExternalName", "externalName": "db.example.org"}})
    answer = records.resolve("ext.ns.svc.cluster.local.", "A")
    assert answer is not None
    assert answer.records == [Record("ext.ns.svc.cluster.local.", "CNAME", "db.example.org.")]


def test_ptr_of_a_cluster_ip_and_fallthrough_for_unknown_addresses() -> None:
    records = ClusterRecords()
    records.set_service(service("web"))
    answer = records.resolve("5.5.96.10.in-addr.arpa.", "PTR")
    assert answer is not None
    assert [r.data for r in answer.records] == ["web.ns.svc.cluster.local."]
    assert records.resolve("8.8.8.8.in-addr.arpa.", "PTR") is None


def test_pod_names_and_names_outside_the_zone() -> None:
    records = ClusterRecords()
    pod = records.resolve("10-244-1-5.ns.pod.cluster.local.", "A")
    assert pod is not None and [r.data for r in pod.records] == ["10.244.1.5"]
    bad = records.resolve("not-an-ip.ns.pod.cluster.local.", "A")
    assert bad is not None and bad.rcode == "NXDOMAIN"
    assert records.resolve("example.org.", "A") is None
    assert records.resolve("cluster.local.example.org.", "A") is None


def test_every_change_moves_the_generation() -> None:
    records = ClusterRecords()
    before = records.generation
    records.set_service(service("web"))
    records.set_slice(endpoint_slice("web", [{"addresses": ["10.244.1.5"]}]))
    assert records.generation == before + 2
