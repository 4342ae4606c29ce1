"""networking.k8s.io/v1 ingresses, ingress classes and network policies."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.apiserver.endpoints.tables.cells import (
    NONE,
    age,
    format_label_selector,
    name_of,
)
from minikube_py.apiserver.endpoints.tables.table import AGE, NAME, Cells, column

INGRESS_COLUMNS = (
    NAME,
    column("Class", "string", "The name of the IngressClass resource that should be used for "
                              "additional configuration"),
    column("Hosts", "string", "Hosts that incoming requests are matched against before the "
                              "ingress rule"),
    column("Address", "string", "Address is a list containing ingress points for the "
                                "load-balancer"),
    column("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
)
MAX_HOSTS = 3


def print_ingress(ingress: Obj, now: datetime) -> Cells:
    """printIngress: class, hosts, load balancer addresses and the open ports."""
    spec = ingress.get("spec") or {}
    return [
        name_of(ingress),
        spec.get("ingressClassName", NONE),
        format_hosts(spec.get("rules") or []),
        load_balancer_addresses((ingress.get("status") or {}).get("loadBalancer") or {}),
        "80, 443" if spec.get("tls") else "80",
        age(ingress, now),
    ]


def format_hosts(rules: list[Obj]) -> str:
    """formatHosts: the hosts of the rules, three at most (and how many rules more),
    `*` when no rule names one."""
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == MAX_HOSTS:
            more = True
        if not more and rule.get("host"):
            hosts.append(rule["host"])
    if not hosts:
        return "*"
    text = ",".join(hosts)
    if more:
        return f"{text} + {len(rules) - MAX_HOSTS} more..."
    return text


def load_balancer_addresses(balancer: Obj) -> str:
    """ingressLoadBalancerStatusStringer (wide, as the server prints): the sorted IPs, or
    hostnames where there is no IP."""
    addresses = {entry.get("ip") or entry.get("hostname")
                 for entry in balancer.get("ingress") or ()}
    return ",".join(sorted(address for address in addresses if address))


INGRESS_CLASS_COLUMNS = (
    NAME,
    column("Controller", "string", "Controller that is responsible for handling this class"),
    column("Parameters", "string", "A reference to a resource with additional parameters"),
    AGE,
)


def print_ingress_class(ingress_class: Obj, now: datetime) -> Cells:
    """printIngressClass: the controller, and the parameters as Kind[.group]/name."""
    spec = ingress_class.get("spec") or {}
    parameters = NONE
    reference = spec.get("parameters")
    if reference:
        parameters = reference.get("kind", "")
        if reference.get("apiGroup") is not None:
            parameters += "." + reference["apiGroup"]
        parameters += "/" + reference.get("name", "")
    return [name_of(ingress_class), spec.get("controller", ""), parameters,
            age(ingress_class, now)]


NETWORK_POLICY_COLUMNS = (
    NAME,
    column("Pod-Selector", "string", "Selects the pods to which this NetworkPolicy object "
           "applies.  The array of ingress rules is applied to any pods selected by this "
           "field. Multiple network policies can select the same set of pods.  In this case, "
           "the ingress rules for each are combined additively. This field is NOT optional "
           "and follows standard label selector semantics. An empty podSelector matches all "
           "pods in this namespace."),
    AGE,
)


def print_network_policy(policy: Obj, now: datetime) -> Cells:
    """printNetworkPolicy: the pod selector."""
    selector = (policy.get("spec") or {}).get("podSelector")
    return [name_of(policy), format_label_selector(selector), age(policy, now)]
