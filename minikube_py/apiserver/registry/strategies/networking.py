"""Strategies of networking.k8s.io: Ingress, IngressClass, NetworkPolicy.

Upstream: pkg/registry/networking/{ingress,ingressclass,networkpolicy}/strategy.go,
pkg/apis/networking/v1/defaults.go and pkg/apis/networking/validation/validation.go.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list, items_of, set_default
from minikube_py.api.validation import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    validate_dns1035_label,
    validate_dns1123_subdomain,
    validate_domain_prefixed_path,
    validate_immutable,
    validate_label_selector,
    validate_port_number,
    validate_wildcard_dns1123_subdomain,
)
from minikube_py.apiserver.registry.strategies.base import KindStrategy
from minikube_py.apiserver.registry.strategies.fields import (
    as_invalid,
    child,
    cidr_errors,
    index,
    ip_errors,
    path_segment_name,
    port_name_errors,
)

# --- Ingress -----------------------------------------------------------------------------

PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]
INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
INVALID_PATH_SUFFIXES = ("/..", "/.")
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"


class IngressStrategy(KindStrategy):
    """Ingresses: host and path rules to Services. The status (the load balancer's
    addresses) is written by the ingress controller through /status."""

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateIngressCreate: the spec, and the legacy class annotation may not
        disagree with spec.ingressClassName."""
        errors = validate_ingress_spec(as_dict(obj.get("spec")))
        annotations = as_dict(obj["metadata"].get("annotations"))
        class_name = as_dict(obj.get("spec")).get("ingressClassName")
        annotation = annotations.get(INGRESS_CLASS_ANNOTATION)
        if annotation is not None and class_name is not None and annotation != class_name:
            errors.append(invalid(f"annotations.{INGRESS_CLASS_ANNOTATION}", annotation,
                                  "must match `ingressClassName` when both are specified"))
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateIngressUpdate: the spec only (the annotation is checked at create)."""
        return validate_ingress_spec(as_dict(new.get("spec")))

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateIngressLoadBalancerStatus: real IPs and DNS hostnames."""
        errors: list[FieldError] = []
        path = "status.loadBalancer.ingress"
        balancer = as_dict(as_dict(new.get("status")).get("loadBalancer"))
        for i, ingress in items_of(balancer, "ingress"):
            if ingress.get("ip"):
                errors += ip_errors(ingress["ip"], child(index(path, i), "ip"))
            hostname = ingress.get("hostname")
            if hostname:
                hostname_path = child(index(path, i), "hostname")
                errors += as_invalid(hostname_path, hostname,
                                     validate_dns1123_subdomain(str(hostname)))
                if _is_ip(hostname):
                    errors.append(invalid(hostname_path, hostname,
                                          "must be a DNS name, not an IP address"))
        return errors


def validate_ingress_spec(spec: Obj) -> list[FieldError]:
    """ValidateIngressSpec: rules or a default backend, each path typed, each backend
    a Service port or an object."""
    errors: list[FieldError] = []
    if not as_list(spec.get("rules")) and spec.get("defaultBackend") is None:
        errors.append(invalid("spec", spec.get("rules"), "either `defaultBackend` or `rules` "
                                                         "must be specified"))
    if spec.get("defaultBackend") is not None:
        errors += validate_backend(as_dict(spec["defaultBackend"]), "spec.defaultBackend")
    for i, rule in items_of(spec, "rules"):
        errors += validate_rule(rule, index("spec.rules", i))
    for i, tls in items_of(spec, "tls"):
        path = index("spec.tls", i)
        for j, host in enumerate(as_list(tls.get("hosts"))):
            errors += as_invalid(index(child(path, "hosts"), j), host, host_errors(str(host)))
        if tls.get("secretName"):
            errors += as_invalid(child(path, "secretName"), tls["secretName"],
                                 validate_dns1123_subdomain(str(tls["secretName"])))
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        errors += as_invalid("spec.ingressClassName", class_name,
                             validate_dns1123_subdomain(str(class_name)))
    return errors


def host_errors(host: str) -> list[str]:
    """A host of a rule or a TLS entry: a DNS subdomain, or `*.` and one."""
    if "*" in host:
        return validate_wildcard_dns1123_subdomain(host)
    return validate_dns1123_subdomain(host)


def validate_rule(rule: Obj, path: str) -> list[FieldError]:
    """validateIngressRules: the host is a DNS name, the HTTP rule has paths."""
    errors: list[FieldError] = []
    host = rule.get("host")
    if host:
        if _is_ip(host):
            errors.append(invalid(child(path, "host"), host,
                                  "must be a DNS name, not an IP address"))
        errors += as_invalid(child(path, "host"), host, host_errors(str(host)))
    http = rule.get("http")
    if http is None:
        return errors
    http_path = child(path, "http")
    paths = as_list(as_dict(http).get("paths"))
    if not paths:
        errors.append(required(child(http_path, "paths")))
    for i, ingress_path in items_of(as_dict(http), "paths"):
        errors += validate_http_path(ingress_path, index(child(http_path, "paths"), i))
    return errors


def validate_http_path(ingress_path: Obj, path: str) -> list[FieldError]:
    """validateHTTPIngressPath: pathType has no default and decides what `path` may be."""
    path_type = ingress_path.get("pathType")
    if path_type is None:
        return [required(child(path, "pathType"), "pathType must be specified")]
    errors: list[FieldError] = []
    value = ingress_path.get("path", "")
    value = value if isinstance(value, str) else ""
    path_field = child(path, "path")
    if path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errors.append(invalid(path_field, value, "must be an absolute path"))
        errors += [invalid(path_field, value, f"must not contain '{sequence}'")
                   for sequence in INVALID_PATH_SEQUENCES if sequence in value]
        errors += [invalid(path_field, value, f"cannot end with '{suffix}'")
                   for suffix in INVALID_PATH_SUFFIXES if value.endswith(suffix)]
    elif path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errors.append(invalid(path_field, value, "must be an absolute path"))
    else:
        errors.append(not_supported(child(path, "pathType"), path_type, PATH_TYPES))
    return errors + validate_backend(as_dict(ingress_path.get("backend")),
                                     child(path, "backend"))


def validate_backend(backend: Obj, path: str) -> list[FieldError]:
    """validateIngressBackend: exactly one of a Service (and a port by name or number)
    and an object reference."""
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        return validate_typed_reference(as_dict(resource), child(path, "resource"))
    if service is None:
        return [invalid(path, "", "resource or service backend is required")]
    service = as_dict(service)
    errors: list[FieldError] = []
    name = service.get("name")
    if not name:
        errors.append(required(child(path, "service", "name")))
    else:
        errors += as_invalid(child(path, "service", "name"), name,
                             validate_dns1035_label(str(name)))
    port = as_dict(service.get("port"))
    port_name, number = port.get("name"), port.get("number")
    if port_name and number:
        errors.append(invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errors += as_invalid(child(path, "service", "port", "name"), port_name,
                             port_name_errors(str(port_name)))
    elif number:
        errors += validate_port_number(number, child(path, "service", "port", "number"))
    else:
        errors.append(required(path, "port name or number is required"))
    return errors


def validate_typed_reference(reference: Obj, path: str) -> list[FieldError]:
    """validateIngressTypedLocalObjectReference: a resource backend or class parameters."""
    errors: list[FieldError] = []
    if reference.get("apiGroup") is not None:
        errors += as_invalid(child(path, "apiGroup"), reference["apiGroup"],
                             validate_dns1123_subdomain(str(reference["apiGroup"])))
    for field in ("kind", "name"):
        value = reference.get(field)
        if not value:
            errors.append(required(child(path, field), f"{field} is required"))
        else:
            errors += as_invalid(child(path, field), value, path_segment_name(str(value)))
    return errors


def _is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


# --- IngressClass ------------------------------------------------------------------------

MAX_CONTROLLER_LENGTH = 250
PARAMETER_SCOPES = ["Cluster", "Namespace"]


class IngressClassStrategy(KindStrategy):
    """IngressClasses: which controller implements the ingresses of a class."""

    def default(self, obj: Obj) -> None:
        """SetDefaults_IngressClass: parameters are cluster-scoped unless said otherwise."""
        parameters = as_dict(obj.get("spec")).get("parameters")
        if isinstance(parameters, dict):
            set_default(parameters, "scope", "Cluster")

    def validate(self, obj: Obj) -> list[FieldError]:
        """validateIngressClassSpec: a domain-prefixed controller name and a reference to
        the parameters."""
        spec = as_dict(obj.get("spec"))
        controller = spec.get("controller", "")
        controller = controller if isinstance(controller, str) else ""
        errors: list[FieldError] = []
        if len(controller) > MAX_CONTROLLER_LENGTH:
            errors.append(too_long("spec.controller", MAX_CONTROLLER_LENGTH))
        errors += validate_domain_prefixed_path(controller, "spec.controller")
        if spec.get("parameters") is not None:
            errors += validate_parameters(as_dict(spec["parameters"]), "spec.parameters")
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """The controller of a class never changes."""
        return self.validate(new) + validate_immutable(
            as_dict(new.get("spec")).get("controller"),
            as_dict(old.get("spec")).get("controller"), "spec.controller")


def validate_parameters(parameters: Obj, path: str) -> list[FieldError]:
    """validateIngressClassParametersReference: a namespace exactly when the scope is
    Namespace."""
    errors = validate_typed_reference(parameters, path)
    scope = parameters.get("scope")
    if scope is None:
        return errors + [required(child(path, "scope"))]
    if scope not in PARAMETER_SCOPES:
        return errors + [not_supported(child(path, "scope"), scope, PARAMETER_SCOPES)]
    namespace = parameters.get("namespace")
    if scope == "Namespace":
        if namespace is None:
            errors.append(required(child(path, "namespace"),
                                   "`parameters.scope` is set to 'Namespace'"))
        else:
            errors += as_invalid(child(path, "namespace"), namespace,
                                 validate_dns1035_label(str(namespace)))
    elif namespace is not None:
        errors.append(forbidden(child(path, "namespace"),
                                "`parameters.scope` is set to 'Cluster'"))
    return errors


# --- NetworkPolicy -----------------------------------------------------------------------

POLICY_TYPES = ["Ingress", "Egress"]
PORT_PROTOCOLS = ["TCP", "UDP", "SCTP"]


class NetworkPolicyStrategy(KindStrategy):
    """NetworkPolicies: which traffic the selected pods may receive and send."""

    def default(self, obj: Obj) -> None:
        """SetDefaults_NetworkPolicy: policyTypes is Ingress, plus Egress when egress rules
        are given; SetDefaults_NetworkPolicyPort: ports are TCP."""
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        if not spec.get("policyTypes"):
            spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
        for direction in ("ingress", "egress"):
            for _, rule in items_of(spec, direction):
                for _, port in items_of(rule, "ports"):
                    set_default(port, "protocol", "TCP")

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateNetworkPolicySpec."""
        spec = as_dict(obj.get("spec"))
        errors = validate_label_selector(spec.get("podSelector"), "spec.podSelector")
        for direction, peers in (("ingress", "from"), ("egress", "to")):
            for i, rule in items_of(spec, direction):
                rule_path = index(child("spec", direction), i)
                for j, port in items_of(rule, "ports"):
                    errors += validate_policy_port(port, index(child(rule_path, "ports"), j))
                for j, peer in items_of(rule, peers):
                    errors += validate_peer(peer, index(child(rule_path, peers), j))
        policy_types = as_list(spec.get("policyTypes"))
        if len(policy_types) > len(POLICY_TYPES):
            return errors + [invalid("spec.policyTypes", policy_types,
                                     "may not specify more than two policyTypes")]
        for i, policy_type in enumerate(policy_types):
            if policy_type not in POLICY_TYPES:
                errors.append(not_supported(index("spec.policyTypes", i), policy_type,
                                            POLICY_TYPES))
        return errors


def validate_policy_port(port: Obj, path: str) -> list[FieldError]:
    """ValidateNetworkPolicyPort: a protocol, a port (number or name) and an end port
    that only a numeric port may have."""
    errors: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PORT_PROTOCOLS:
        errors.append(not_supported(child(path, "protocol"), protocol, PORT_PROTOCOLS))
    number, end_port = port.get("port"), port.get("endPort")
    if number is None:
        if end_port is not None:
            errors.append(invalid(child(path, "endPort"), end_port,
                                  "may not be specified when `port` is not specified"))
    elif isinstance(number, int):
        errors += validate_port_number(number, child(path, "port"))
        if end_port is not None:
            if isinstance(end_port, int) and end_port < number:
                errors.append(invalid(child(path, "endPort"), number,
                                      "must be greater than or equal to `port`"))
            errors += validate_port_number(end_port, child(path, "endPort"))
    else:
        if end_port is not None:
            errors.append(invalid(child(path, "endPort"), end_port,
                                  "may not be specified when `port` is non-numeric"))
        errors += as_invalid(child(path, "port"), number, port_name_errors(str(number)))
    return errors


def validate_peer(peer: Obj, path: str) -> list[FieldError]:
    """ValidateNetworkPolicyPeer: selectors, or an IP block alone."""
    errors: list[FieldError] = []
    present = 0
    for selector in ("podSelector", "namespaceSelector"):
        if peer.get(selector) is not None:
            present += 1
            errors += validate_label_selector(peer[selector], child(path, selector))
    if peer.get("ipBlock") is not None:
        present += 1
        errors += validate_ip_block(as_dict(peer["ipBlock"]), child(path, "ipBlock"))
    if present == 0:
        errors.append(required(path, "must specify a peer"))
    elif present > 1 and peer.get("ipBlock") is not None:
        errors.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return errors


def validate_ip_block(block: Obj, path: str) -> list[FieldError]:
    """ValidateIPBlock: a CIDR, and exceptions strictly inside it."""
    cidr = block.get("cidr")
    if not cidr:
        return [required(child(path, "cidr"))]
    errors = cidr_errors(cidr, child(path, "cidr"))
    if errors:
        return errors
    network = ipaddress.ip_network(cidr, strict=False)
    for i, exception in enumerate(as_list(block.get("except"))):
        exception_path = index(child(path, "except"), i)
        exception_errors = cidr_errors(exception, exception_path)
        if exception_errors:
            errors += exception_errors
            continue
        inner = ipaddress.ip_network(exception, strict=False)
        if (inner.version != network.version or not inner.subnet_of(network)
                or inner.prefixlen <= network.prefixlen):
            errors.append(invalid(exception_path, exception,
                                  "must be a strict subset of `cidr`"))
    return errors
