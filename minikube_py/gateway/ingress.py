"""Ingress (networking.k8s.io/v1) -> the data plane's ports 80 and 443. Pure, as
gatewayapi.py.

    ours      spec.ingressClassName (or the kubernetes.io/ingress.class annotation) names an
              IngressClass whose spec.controller is INGRESS_CONTROLLER; no class at all:
              ours when our class is the default one
    rules     host ("" any, *.a.b a wildcard) x paths: Exact, Prefix (element-wise, as
              upstream defines it) and ImplementationSpecific (here: Prefix); among the
              Ingresses of a host, Exact first, then the longest path, then the oldest
    default   spec.defaultBackend: the requests no rule takes (else 404)
    tls       each spec.tls[]'s Secret serves its hosts on 443 (by SNI); the rules are
              served on both ports, as ingress-nginx does
    status    status.loadBalancer.ingress: the LoadBalancer Service's address
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from minikube_py.api import Obj
from minikube_py.gateway.nginx import Action, Backend, Candidate, Certificate, Match, Port

INGRESS_CLASS = "minikube-py"
INGRESS_CONTROLLER = "minikube-py.io/ingress-controller"
IS_DEFAULT_CLASS = "ingressclass.kubernetes.io/is-default-class"
CLASS_ANNOTATION = "kubernetes.io/ingress.class"
HTTP_PORT = 80
HTTPS_PORT = 443
PATH_TYPES = {"Exact": "Exact", "Prefix": "PathPrefix", "ImplementationSpecific": "PathPrefix"}


@dataclass
class IngressPlan:
    ports: list[Port] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    ingresses: list[tuple[str, str]] = field(default_factory=list)  # ours, to give status


def ingress_class_object() -> Obj:
    """Our IngressClass, the default one."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": INGRESS_CLASS, "annotations": {IS_DEFAULT_CLASS: "true"}},
            "spec": {"controller": INGRESS_CONTROLLER}}


def is_ours(ingress: Obj, classes: dict[str, Obj]) -> bool:
    """Whether the Ingress's class (or the default class, when it names none) is ours."""
    name = ((ingress.get("spec") or {}).get("ingressClassName")
            or (ingress["metadata"].get("annotations") or {}).get(CLASS_ANNOTATION))
    if name:
        return ((classes.get(name) or {}).get("spec") or {}).get("controller") == (
            INGRESS_CONTROLLER)
    defaults = [obj for obj in classes.values()
                if (obj["metadata"].get("annotations") or {}).get(IS_DEFAULT_CLASS) == "true"]
    return any((obj.get("spec") or {}).get("controller") == INGRESS_CONTROLLER
               for obj in defaults)


def backend_address(namespace: str, backend: Obj, services: dict[tuple[str, str], Obj]
                    ) -> str | None:
    """A backend's ClusterIP:port (the port by number or name); None: answer 500."""
    service_ref = backend.get("service")
    if not service_ref:
        return None
    service = services.get((namespace, service_ref["name"]))
    if service is None:
        return None
    spec = service.get("spec") or {}
    wanted = service_ref.get("port") or {}
    for port in spec.get("ports") or []:
        if port.get("port") == wanted.get("number") or (
                wanted.get("name") and port.get("name") == wanted.get("name")):
            if spec.get("clusterIP") and spec["clusterIP"] != "None":
                return f"{spec['clusterIP']}:{port['port']}"
    return None


def compute_ingress(ingresses: dict[tuple[str, str], Obj], classes: dict[str, Obj],
                    services: dict[tuple[str, str], Obj],
                    secrets: dict[tuple[str, str], Obj]) -> IngressPlan:
    """Our Ingresses as ports 80 and 443 (see the module's docstring)."""
    plan = IngressPlan()
    entries: list[tuple[tuple[Any, ...], Candidate]] = []
    certificates: list[Certificate] = []
    ours = sorted(((key, obj) for key, obj in ingresses.items() if is_ours(obj, classes)),
                  key=lambda item: (item[1]["metadata"].get("creationTimestamp", ""),
                                    item[0]))
    for age, (key, ingress) in enumerate(ours):
        plan.ingresses.append(key)
        namespace = key[0]
        spec = ingress.get("spec") or {}
        for rule in spec.get("rules") or []:
            for path in (rule.get("http") or {}).get("paths") or []:
                match = Match(PATH_TYPES.get(path.get("pathType", "Prefix"), "PathPrefix"),
                              path.get("path") or "/")
                address = backend_address(namespace, path.get("backend") or {}, services)
                order = (0 if match.path_type == "Exact" else 1, -len(match.path), age)
                entries.append((order, Candidate(rule.get("host") or "", match,
                                                 Action((Backend(address),)))))
        if spec.get("defaultBackend"):
            address = backend_address(namespace, spec["defaultBackend"], services)
            entries.append(((2, 0, age), Candidate("", Match("PathPrefix", "/"),
                                                   Action((Backend(address),)))))
        for tls in spec.get("tls") or []:
            secret = secrets.get((namespace, tls.get("secretName") or ""))
            data = (secret or {}).get("data") or {}
            if "tls.crt" not in data or "tls.key" not in data:
                continue
            stem = f"ingress_{namespace}_{tls['secretName']}"
            plan.files[f"{stem}.crt"] = base64.b64decode(data["tls.crt"])
            plan.files[f"{stem}.key"] = base64.b64decode(data["tls.key"])
            for host in tls.get("hosts") or [""]:
                certificates.append(Certificate(host, f"{stem}.crt", f"{stem}.key"))
    entries.sort(key=lambda entry: entry[0])
    candidates = [candidate for _, candidate in entries]
    plan.ports.append(Port(HTTP_PORT, candidates=candidates, public_port=HTTP_PORT))
    if certificates:
        plan.ports.append(Port(HTTPS_PORT, candidates=list(candidates),
                               certificates=certificates, public_port=HTTPS_PORT))
    return plan


def ingress_status(address: str | None) -> Obj:
    """status.loadBalancer, as the service-lb controller gave our Service its address."""
    return {"loadBalancer": {"ingress": [{"ip": address}] if address else []}}
