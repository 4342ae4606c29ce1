"""`describe ingress` and `describe ingressclass` (describe.go: IngressDescriber,
IngressClassDescriber).

    ingress: Name, Labels, Namespace, Address, Ingress Class, Default backend, TLS,
             Rules (host, then each path and its backend with the Service's endpoints),
             Annotations, Events
    class:   Name, Labels, Annotations, Controller, Parameters, Events
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    describe_events,
    print_annotations_multiline,
    print_labels_multiline,
    search_events,
)
from minikube_py.mkctl.describers.service import format_endpoint_slices
from minikube_py.mkctl.describers.writer import LEVEL_0, LEVEL_1, LEVEL_2, PrefixWriter
from minikube_py.mkctl.errors import MkctlError


def ingress_describer(ingress: Obj, lookups: Lookups, settings: Settings) -> str:
    """describeIngressV1: each backend Service is looked up with its EndpointSlices."""
    meta = ingress.get("metadata") or {}
    spec = ingress.get("spec") or {}
    namespace = meta.get("namespace", "")
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    w.write(LEVEL_0, f"Namespace:\t{namespace}\n")
    balancer = (ingress.get("status") or {}).get("loadBalancer") or {}
    w.write(LEVEL_0, f"Address:\t{load_balancer_addresses(balancer)}\n")
    w.write(LEVEL_0, f"Ingress Class:\t{spec.get('ingressClassName', '<none>')}\n")
    default_backend = "<default>"
    if spec.get("defaultBackend") is not None:
        default_backend = describe_backend(lookups, namespace, spec["defaultBackend"])
    w.write(LEVEL_0, f"Default backend:\t{default_backend}\n")
    if spec.get("tls"):
        w.write(LEVEL_0, "TLS:\n")
        for tls in spec["tls"]:
            hosts = ",".join(tls.get("hosts") or [])
            if tls.get("secretName"):
                w.write(LEVEL_1, f"{tls['secretName']} terminates {hosts}\n")
            else:
                w.write(LEVEL_1, f"SNI routes {hosts}\n")
    w.write(LEVEL_0, "Rules:\n  Host\tPath\tBackends\n")
    w.write(LEVEL_1, "----\t----\t--------\n")
    described = 0
    for rule in spec.get("rules") or []:
        if rule.get("http") is None:
            continue
        described += 1
        w.write(LEVEL_1, f"{rule.get('host') or '*'}\t\n")
        for path in rule["http"].get("paths") or []:
            backend = describe_backend(lookups, namespace, path.get("backend") or {})
            w.write(LEVEL_2, f"\t{path.get('path', '')} \t{backend}\n")
    if described == 0:
        w.write(LEVEL_1, f"*\t*\t{default_backend}\n")
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    describe_events(search_events(lookups, namespace, meta.get("name", ""), "Ingress",
                                  meta.get("uid", ""), settings), w)
    return w.tabbed()


def load_balancer_addresses(balancer: Obj) -> str:
    """ingressLoadBalancerStatusStringerV1 (wide): the sorted IPs, or hostnames where an
    entry has no IP."""
    addresses = {entry.get("ip") or entry.get("hostname")
                 for entry in balancer.get("ingress") or ()}
    return ",".join(sorted(address for address in addresses if address))


def describe_backend(lookups: Lookups, namespace: str, backend: Obj) -> str:
    """describeBackendV1: `service:port (endpoints)`, or the object a resource backend
    names; a failed lookup shows as `(<error: ...>)`."""
    service = backend.get("service")
    if service is not None:
        port = service.get("port") or {}
        shown = f"{service.get('name', '')}:{port.get('number') or port.get('name', '')}"
        try:
            slices = lookups.list(
                f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
                {"labelSelector": f"kubernetes.io/service-name={service.get('name', '')}"})
            found = lookups.get(f"/api/v1/namespaces/{namespace}/services/"
                                f"{service.get('name', '')}")
        except MkctlError as err:
            return f"{shown} (<error: {err}>)"
        port_name = ""
        for service_port in (found.get("spec") or {}).get("ports") or []:
            number_matches = port.get("number") and port["number"] == service_port.get("port")
            name_matches = port.get("name") and port["name"] == service_port.get("name")
            if number_matches or name_matches:
                port_name = service_port.get("name", "")
        return f"{shown} ({format_endpoint_slices(slices, port_name)})"
    resource = backend.get("resource")
    if resource is not None:
        return (f"APIGroup: {resource.get('apiGroup', '<none>')}, "
                f"Kind: {resource.get('kind', '')}, Name: {resource.get('name', '')}")
    return ""


def ingress_class_describer(ingress_class: Obj, lookups: Lookups, settings: Settings) -> str:
    """describeIngressClassV1: the controller and where its parameters are."""
    meta = ingress_class.get("metadata") or {}
    spec = ingress_class.get("spec") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    w.write(LEVEL_0, f"Controller:\t{spec.get('controller', '')}\n")
    parameters = spec.get("parameters")
    if parameters is not None:
        w.write(LEVEL_0, "Parameters:\n")
        if parameters.get("apiGroup") is not None:
            w.write(LEVEL_1, f"APIGroup:\t{parameters['apiGroup']}\n")
        w.write(LEVEL_1, f"Kind:\t{parameters.get('kind', '')}\n")
        w.write(LEVEL_1, f"Name:\t{parameters.get('name', '')}\n")
    describe_events(search_events(lookups, "", meta.get("name", ""), "IngressClass",
                                  meta.get("uid", ""), settings), w)
    return w.tabbed()
