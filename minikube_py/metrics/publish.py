"""How the API server finds the metrics server: an APIService, a Service and its endpoint.

Upstream's metrics-server is a Deployment behind the Service kube-system/metrics-server,
and the APIService v1beta1.metrics.k8s.io names that Service: the API server proxies
`/apis/metrics.k8s.io/v1beta1/...` to one of its endpoints. Here the metrics server is a
process on the host, so the Service has no selector and this process writes the Service's
EndpointSlice itself, at the address the API server reaches it on. It speaks plain HTTP
until the cluster has TLS.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.metricsapi import (
    ADAPTER_API_SERVICES,
    API_SERVICE,
    NAMESPACE,
    SERVICE_NAME,
    metrics_service,
)
from minikube_py.client.errors import AlreadyExists, NotFound
from minikube_py.client.rest import Client

SLICE_NAME = "metrics-server-host"
MANAGED_BY = "metrics.minikube-py.io"


def metrics_slice(service: Obj, address: str, port: int) -> Obj:
    meta = service["metadata"]
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": SLICE_NAME, "namespace": NAMESPACE,
                         "labels": {"kubernetes.io/service-name": SERVICE_NAME,
                                    "endpointslice.kubernetes.io/managed-by": MANAGED_BY},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Service",
                                              "name": meta["name"], "uid": meta["uid"]}]},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [address],
                           "conditions": {"ready": True, "serving": True,
                                          "terminating": False}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}


async def publish(client: Client, address: str, port: int) -> None:
    """The Service, its slice pointing here, and the APIServices (each kept if there)."""
    services = client.resource("services")
    try:
        service = await services.create(metrics_service(), NAMESPACE)
    except AlreadyExists:
        service = await services.get(SERVICE_NAME, NAMESPACE)
    slices = client.resource("endpointslices", "discovery.k8s.io")
    wanted = metrics_slice(service, address, port)
    try:
        current = await slices.get(SLICE_NAME, NAMESPACE)
    except NotFound:
        await slices.create(wanted, NAMESPACE)
    else:
        wanted["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await slices.update(wanted)
    for api_service in (API_SERVICE, *ADAPTER_API_SERVICES):
        try:
            await client.resource("apiservices", "apiregistration.k8s.io").create(api_service)
        except AlreadyExists:
            pass
