"""How pods reach the DNS server: the `kube-dns` Service and an EndpointSlice of ours.

Pods get `nameserver 10.96.0.10` in their resolv.conf (the kubelet's --cluster-dns).
10.96.0.10 is the ClusterIP of the Service kube-system/kube-dns, as in a kubeadm
cluster. There, CoreDNS runs as pods and the EndpointSlice controller lists them; here
the DNS server is a process on the host, so the Service has no selector and the DNS
process writes the Service's EndpointSlice itself, pointing at the address pods reach
it on (--advertise-address). The proxy then routes 10.96.0.10:53 there like any other
Service. The slice is owned by the Service: deleting the Service removes it.
"""

from __future__ import annotations

import logging

from minikube_py.api import Obj
from minikube_py.client.errors import AlreadyExists, NotFound
from minikube_py.client.rest import Client

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"
SERVICE_NAME = "kube-dns"
SLICE_NAME = "kube-dns-cluster-dns"
MANAGED_BY = "dns.minikube-py.io"


def kube_dns_service(cluster_ip: str) -> Obj:
    """The Service kubeadm's DNS add-on creates (labels, port names), without a selector."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": SERVICE_NAME, "namespace": NAMESPACE,
                     "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
                                "kubernetes.io/name": "KubeDNS"}},
        "spec": {"clusterIP": cluster_ip, "ports": [
            {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
            {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
            {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153}]},
    }


def kube_dns_slice(service: Obj, address: str, dns_port: int, metrics_port: int) -> Obj:
    """The Service's one EndpointSlice: this DNS process at `address`."""
    meta = service["metadata"]
    return {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {
            "name": SLICE_NAME, "namespace": NAMESPACE,
            "labels": {"kubernetes.io/service-name": SERVICE_NAME,
                       "endpointslice.kubernetes.io/managed-by": MANAGED_BY},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": meta["name"],
                                 "uid": meta["uid"]}]},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address],
                       "conditions": {"ready": True, "serving": True, "terminating": False}}],
        "ports": [{"name": "dns", "port": dns_port, "protocol": "UDP"},
                  {"name": "dns-tcp", "port": dns_port, "protocol": "TCP"},
                  {"name": "metrics", "port": metrics_port, "protocol": "TCP"}],
    }


async def publish(client: Client, cluster_ip: str, address: str, dns_port: int,
                  metrics_port: int) -> None:
    """Create the kube-dns Service if it is missing, and point its slice at us."""
    services = client.resource("services")
    try:
        service = await services.create(kube_dns_service(cluster_ip), NAMESPACE)
    except AlreadyExists:
        service = await services.get(SERVICE_NAME, NAMESPACE)
    if service["spec"].get("clusterIP") != cluster_ip:
        log.warning("Service %s/%s has ClusterIP %s, not %s: pods configured for %s "
                    "will not reach DNS", NAMESPACE, SERVICE_NAME,
                    service["spec"].get("clusterIP"), cluster_ip, cluster_ip)
    slices = client.resource("endpointslices", "discovery.k8s.io")
    wanted = kube_dns_slice(service, address, dns_port, metrics_port)
    try:
        current = await slices.get(SLICE_NAME, NAMESPACE)
    except NotFound:
        await slices.create(wanted, NAMESPACE)
        return
    wanted["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    await slices.update(wanted)
