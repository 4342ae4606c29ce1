"""networking.k8s.io/v1: Ingress, IngressClass and NetworkPolicy.

The API server stores and validates them; no ingress controller routes traffic and
no network plugin enforces policies yet.

Upstream: k8s.io/api/networking/v1/types.go.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import (
    INT_OR_STRING,
    INTEGER,
    STRING,
    atomic,
    atomic_struct,
    f,
    obj,
)
from minikube_py.api.schema.meta import LABEL_SELECTOR, api_object
from minikube_py.api.schema.references import TYPED_LOCAL_OBJECT_REFERENCE

NETWORKING = "io.k8s.api.networking.v1"

# --- Ingress ---------------------------------------------------------------------------

INGRESS_BACKEND = obj(
    f"{NETWORKING}.IngressBackend",
    "Where matching requests go: a Service port or another object (exactly one).",
    resource=f(TYPED_LOCAL_OBJECT_REFERENCE, "An object of the ingress's namespace "
               "(e.g. a storage bucket); not with service."),
    service=f(obj(
        f"{NETWORKING}.IngressServiceBackend",
        "A Service and one of its ports.",
        name=f(STRING, "Name of the Service, in the ingress's namespace.", required=True),
        port=f(atomic_struct(obj(
            f"{NETWORKING}.ServiceBackendPort",
            "A port of the Service, by name or by number (exactly one).",
            name=f(STRING, "Name of the port."),
            number=f(INTEGER, "Number of the port."),
        )), "The Service's port."),
    ), "A Service; not with resource."),
)

INGRESS = api_object(
    f"{NETWORKING}.Ingress",
    "Rules routing outside HTTP(S) traffic to Services, by host and path.",
    spec=f(obj(
        f"{NETWORKING}.IngressSpec",
        "The routes, their TLS and the controller class.",
        defaultBackend=f(INGRESS_BACKEND, "Backend of the requests no rule matches."),
        ingressClassName=f(STRING, "Name of the IngressClass whose controller implements "
                           "this ingress."),
        rules=atomic(obj(
            f"{NETWORKING}.IngressRule",
            "The paths of one host (any host when host is empty).",
            host=f(STRING, "Fully qualified domain name, possibly with a leading `*.`."),
            http=f(obj(
                f"{NETWORKING}.HTTPIngressRuleValue",
                "The HTTP paths of a rule.",
                paths=atomic(obj(
                    f"{NETWORKING}.HTTPIngressPath",
                    "A path and the backend of the requests that match it.",
                    backend=f(INGRESS_BACKEND, "Where matching requests go.",
                              required=True),
                    path=f(STRING, "Path to match, starting with `/`."),
                    pathType=f(STRING, "How path matches: Exact, Prefix or "
                               "ImplementationSpecific.", required=True),
                ), "Paths and their backends.", required=True),
            ), "HTTP paths of the rule."),
        ), "Host rules; without any, all traffic goes to the default backend."),
        tls=atomic(obj(
            f"{NETWORKING}.IngressTLS",
            "Hosts served over TLS, with the Secret holding their certificate.",
            hosts=atomic(STRING, "Hosts in the certificate."),
            secretName=f(STRING, "Secret holding the certificate and key."),
        ), "TLS configuration (port 443)."),
    ), "Desired routes."),
    status=f(obj(
        f"{NETWORKING}.IngressStatus",
        "The observed state of an ingress.",
        loadBalancer=f(obj(
            f"{NETWORKING}.IngressLoadBalancerStatus",
            "The load balancer's addresses.",
            ingress=atomic(obj(
                f"{NETWORKING}.IngressLoadBalancerIngress",
                "One address of the load balancer.",
                hostname=f(STRING, "DNS name of the load balancer."),
                ip=f(STRING, "IP address of the load balancer."),
                ports=atomic(obj(
                    f"{NETWORKING}.IngressPortStatus",
                    "The state of one port of the load balancer.",
                    error=f(STRING, "Why the port is not usable, in CamelCase."),
                    port=f(INTEGER, "The port number.", required=True),
                    protocol=f(STRING, "TCP, UDP or SCTP.", required=True),
                ), "The load balancer's ports."),
            ), "Ingress points of the load balancer."),
        ), "The load balancer of the ingress."),
    ), "Observed state of the ingress. Read-only."),
)

INGRESS_CLASS = api_object(
    f"{NETWORKING}.IngressClass",
    "A kind of ingress and the controller that implements it.",
    spec=f(obj(
        f"{NETWORKING}.IngressClassSpec",
        "The class's controller and parameters.",
        controller=f(STRING, "Name of the controller, e.g. example.com/ingress-controller."),
        parameters=f(obj(
            f"{NETWORKING}.IngressClassParametersReference",
            "An object holding the controller's settings for this class.",
            apiGroup=f(STRING, "API group of the object; empty for the core group."),
            kind=f(STRING, "Kind of the object.", required=True),
            name=f(STRING, "Name of the object.", required=True),
            namespace=f(STRING, "Namespace of the object, when scope is Namespace."),
            scope=f(STRING, "Cluster (default) or Namespace."),
        ), "The controller's settings for this class."),
    ), "The class."),
)

# --- NetworkPolicy ---------------------------------------------------------------------

NETWORK_POLICY_PORT = obj(
    f"{NETWORKING}.NetworkPolicyPort",
    "A port (or range of ports) and protocol.",
    endPort=f(INTEGER, "Last port of a range starting at port."),
    port=f(INT_OR_STRING, "Port number or named port of the pods; all ports when unset."),
    protocol=f(STRING, "TCP (default), UDP or SCTP."),
)

NETWORK_POLICY_PEER = obj(
    f"{NETWORKING}.NetworkPolicyPeer",
    "Pods, namespaces or an IP block traffic may come from or go to.",
    ipBlock=f(obj(
        f"{NETWORKING}.IPBlock",
        "A CIDR, minus some smaller CIDRs.",
        cidr=f(STRING, "The CIDR, e.g. 192.168.1.0/24.", required=True),
        except_=atomic(STRING, "CIDRs inside cidr to leave out."),
    ), "An IP block; not with the selectors."),
    namespaceSelector=f(LABEL_SELECTOR, "Labels of the namespaces (all when empty)."),
    podSelector=f(LABEL_SELECTOR, "Labels of the pods (in the policy's namespace unless "
                  "namespaceSelector is set)."),
)

NETWORK_POLICY = api_object(
    f"{NETWORKING}.NetworkPolicy",
    "Which traffic the selected pods may receive and send.",
    spec=f(obj(
        f"{NETWORKING}.NetworkPolicySpec",
        "The pods and the traffic they allow.",
        egress=atomic(obj(
            f"{NETWORKING}.NetworkPolicyEgressRule",
            "Traffic the pods may send: to these peers on these ports.",
            ports=atomic(NETWORK_POLICY_PORT, "Destination ports (all when empty)."),
            to=atomic(NETWORK_POLICY_PEER, "Destinations (all when empty)."),
        ), "Allowed outgoing traffic."),
        ingress=atomic(obj(
            f"{NETWORKING}.NetworkPolicyIngressRule",
            "Traffic the pods may receive: from these peers on these ports.",
            from_=atomic(NETWORK_POLICY_PEER, "Sources (all when empty)."),
            ports=atomic(NETWORK_POLICY_PORT, "Destination ports (all when empty)."),
        ), "Allowed incoming traffic."),
        podSelector=f(LABEL_SELECTOR, "Labels of the pods of the namespace the policy "
                      "applies to (all when empty)."),
        policyTypes=atomic(STRING, "Ingress and/or Egress: the directions the policy "
                           "restricts."),
    ), "Desired policy."),
)
