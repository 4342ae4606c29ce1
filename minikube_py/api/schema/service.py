"""core/v1 Service and Endpoints: a stable virtual IP for pods, and the addresses behind it.

Upstream: k8s.io/api/core/v1/types.go. Service ports merge by port and are keyed by port
and protocol.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import (
    BOOLEAN,
    INT_OR_STRING,
    INTEGER,
    STRING,
    atomic,
    atomic_map,
    f,
    merged,
    obj,
)
from minikube_py.api.schema.meta import (
    CONDITION,
    api_object,
)
from minikube_py.api.schema.references import CORE, OBJECT_REFERENCE

SERVICE_PORT = obj(
    f"{CORE}.ServicePort",
    "A port of a service.",
    appProtocol=f(STRING, "Application protocol, e.g. http or kubernetes.io/h2c."),
    name=f(STRING, "Name of the port, a DNS_LABEL; required with several ports."),
    nodePort=f(INTEGER, "Port on every node for NodePort and LoadBalancer services."),
    port=f(INTEGER, "The port the service exposes.", required=True),
    protocol=f(STRING, "TCP, UDP or SCTP; defaults to TCP.", default="TCP"),
    targetPort=f(INT_OR_STRING, "Port number or name on the pods; defaults to port."),
)

CLIENT_IP_CONFIG = obj(
    f"{CORE}.ClientIPConfig",
    "ClientIP session affinity settings.",
    timeoutSeconds=f(INTEGER, "How long a client sticks to a backend; default 10800."),
)

SESSION_AFFINITY_CONFIG = obj(
    f"{CORE}.SessionAffinityConfig",
    "Session affinity settings.",
    clientIP=f(CLIENT_IP_CONFIG, "For sessionAffinity ClientIP."),
)

SERVICE_SPEC = obj(
    f"{CORE}.ServiceSpec",
    "The desired state of a service: its ports, selector and type.",
    allocateLoadBalancerNodePorts=f(BOOLEAN, "Allocate node ports for LoadBalancer services; "
                                    "default true."),
    clusterIP=f(STRING, "Virtual IP of the service; None for a headless service."),
    clusterIPs=atomic(STRING, "Virtual IPs, one per IP family; the first equals clusterIP."),
    externalIPs=atomic(STRING, "IPs on which nodes also accept traffic for the service."),
    externalName=f(STRING, "DNS name returned as a CNAME for type ExternalName."),
    externalTrafficPolicy=f(STRING, "Cluster or Local: how external traffic is routed."),
    healthCheckNodePort=f(INTEGER, "Health check port for externalTrafficPolicy Local."),
    internalTrafficPolicy=f(STRING, "Cluster or Local: how in-cluster traffic is routed."),
    ipFamilies=atomic(STRING, "IPv4 and/or IPv6."),
    ipFamilyPolicy=f(STRING, "SingleStack, PreferDualStack or RequireDualStack."),
    loadBalancerClass=f(STRING, "Load balancer implementation for the service."),
    loadBalancerIP=f(STRING, "Deprecated: requested load balancer IP."),
    loadBalancerSourceRanges=atomic(STRING, "Client CIDRs allowed through the load "
                                    "balancer."),
    ports=merged(SERVICE_PORT, "Ports of the service.", key="port",
                 map_keys=("port", "protocol")),
    publishNotReadyAddresses=f(BOOLEAN, "Publish endpoints of pods that are not ready."),
    selector=f(atomic_map(STRING), "Labels of the pods traffic is sent to."),
    sessionAffinity=f(STRING, "ClientIP or None (default)."),
    sessionAffinityConfig=f(SESSION_AFFINITY_CONFIG, "Session affinity settings."),
    trafficDistribution=f(STRING, "Preference for routing, e.g. PreferClose."),
    type=f(STRING, "ClusterIP (default), NodePort, LoadBalancer or ExternalName."),
)

PORT_STATUS = obj(
    f"{CORE}.PortStatus",
    "Status of one port of a load balancer.",
    error=f(STRING, "Problem with the port, as a CamelCase reason."),
    port=f(INTEGER, "The service port.", required=True),
    protocol=f(STRING, "TCP, UDP or SCTP.", required=True),
)

LOAD_BALANCER_INGRESS = obj(
    f"{CORE}.LoadBalancerIngress",
    "An ingress point of a load balancer.",
    hostname=f(STRING, "DNS name of the ingress point."),
    ip=f(STRING, "IP of the ingress point."),
    ipMode=f(STRING, "VIP or Proxy: how traffic for ip is delivered."),
    ports=atomic(PORT_STATUS, "Status of each port."),
)

LOAD_BALANCER_STATUS = obj(
    f"{CORE}.LoadBalancerStatus",
    "Status of a load balancer.",
    ingress=atomic(LOAD_BALANCER_INGRESS, "Ingress points of the load balancer."),
)

SERVICE_STATUS = obj(
    f"{CORE}.ServiceStatus",
    "The observed state of a service.",
    conditions=merged(CONDITION, "Current conditions of the service.", key="type"),
    loadBalancer=f(LOAD_BALANCER_STATUS, "Status of the load balancer, if any."),
)

SERVICE = api_object(
    f"{CORE}.Service",
    "A stable virtual IP and DNS name for a set of pods chosen by a selector.",
    spec=f(SERVICE_SPEC, "Desired state of the service."),
    status=f(SERVICE_STATUS, "Observed state of the service. Read-only."),
)

ENDPOINT_ADDRESS = obj(
    f"{CORE}.EndpointAddress",
    "One IP address of an endpoint.",
    hostname=f(STRING, "Hostname of the endpoint."),
    ip=f(STRING, "IP of the endpoint.", required=True),
    nodeName=f(STRING, "Node hosting the endpoint."),
    targetRef=f(OBJECT_REFERENCE, "Object (usually a pod) providing the endpoint."),
)

ENDPOINT_PORT = obj(
    f"{CORE}.EndpointPort",
    "One port of an endpoint.",
    appProtocol=f(STRING, "Application protocol of the port."),
    name=f(STRING, "Name matching the service port's name."),
    port=f(INTEGER, "The port number.", required=True),
    protocol=f(STRING, "TCP, UDP or SCTP."),
)

ENDPOINT_SUBSET = obj(
    f"{CORE}.EndpointSubset",
    "Addresses sharing a set of ports.",
    addresses=atomic(ENDPOINT_ADDRESS, "Ready addresses."),
    notReadyAddresses=atomic(ENDPOINT_ADDRESS, "Addresses not ready yet."),
    ports=atomic(ENDPOINT_PORT, "The ports."),
)

ENDPOINTS = api_object(
    f"{CORE}.Endpoints",
    "The addresses behind a service (deprecated in favour of EndpointSlice).",
    subsets=atomic(ENDPOINT_SUBSET, "Groups of addresses with their ports."),
)
