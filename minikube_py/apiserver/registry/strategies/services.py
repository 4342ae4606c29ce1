"""The Service strategy (upstream pkg/registry/core/service and ValidateService).

Defaulting fills type ClusterIP, TCP ports whose targetPort is the port, the traffic
policies and the IP family fields. A service's allocated values (cluster IPs, node
ports) stay when an update leaves them out, are dropped when the new type no longer
needs them, and may never be changed to other values. Allocating them is not done here.
"""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list, items_of, set_default, set_default_if_zero
from minikube_py.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_dns1035_label,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_labels,
    validate_port_number,
    validate_qualified_name,
)
from minikube_py.apiserver.registry.strategies.base import NoGenerationStrategy
from minikube_py.apiserver.registry.strategies.fields import (
    PROTOCOLS,
    child,
    cidr_errors,
    format_errors,
    index,
    ip_errors,
    port_num_or_name_errors,
    required_enum,
    special_ip_errors,
)

SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
SESSION_AFFINITIES = ["ClientIP", "None"]
TRAFFIC_POLICIES = ["Cluster", "Local"]
IP_FAMILIES = ["IPv4", "IPv6"]
IP_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
TRAFFIC_DISTRIBUTIONS = ["PreferClose", "PreferSameNode", "PreferSameZone"]
DEFAULT_CLIENT_IP_TIMEOUT_SECONDS = 10800
MAX_CLIENT_IP_TIMEOUT_SECONDS = 86400
NONE = "None"  # the clusterIP of a headless service


def service_type(spec: Obj) -> str:
    return spec.get("type") or "ClusterIP"


def needs_cluster_ip(spec: Obj) -> bool:
    return service_type(spec) != "ExternalName"


def needs_node_ports(spec: Obj) -> bool:
    kind = service_type(spec)
    return kind == "NodePort" or (
        kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False
    )


def needs_health_check_node_port(spec: Obj) -> bool:
    return service_type(spec) == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def externally_accessible(spec: Obj) -> bool:
    """service.ExternallyAccessible: reachable from outside the cluster."""
    kind = service_type(spec)
    return kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and bool(as_list(spec.get("externalIPs")))
    )


def is_headless(spec: Obj) -> bool:
    return as_list(spec.get("clusterIPs")) == [NONE]


class ServiceStrategy(NoGenerationStrategy):
    """Services: names are DNS-1035 labels (they become DNS names and env variables)."""

    return_deleted_object = True  # upstream answers a DELETE with the object

    name_validator = staticmethod(validate_dns1035_label)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        _normalize_cluster_ips(as_dict(obj.get("spec")), None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Keep what was allocated; follow a change of type (upstream's beginUpdate too)."""
        super().prepare_for_update(new, old)
        spec, old_spec = new.get("spec"), as_dict(old.get("spec"))
        if not isinstance(spec, dict):
            return
        _patch_allocated_values(spec, old_spec)
        _normalize_cluster_ips(spec, old_spec)
        _drop_type_dependent_fields(spec, old_spec)
        if service_type(spec) != "LoadBalancer" and isinstance(new.get("status"), dict):
            new["status"].pop("loadBalancer", None)

    def default(self, obj: Obj) -> None:
        """SetDefaults_Service, and the IP family fields the allocator would set."""
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        set_default_if_zero(spec, "sessionAffinity", "None")
        if spec["sessionAffinity"] == "None":
            spec.pop("sessionAffinityConfig", None)
        elif spec["sessionAffinity"] == "ClientIP":
            client_ip = as_dict(as_dict(spec.get("sessionAffinityConfig")).get("clientIP"))
            if client_ip.get("timeoutSeconds") is None:
                spec["sessionAffinityConfig"] = {
                    "clientIP": {"timeoutSeconds": DEFAULT_CLIENT_IP_TIMEOUT_SECONDS}
                }
        set_default_if_zero(spec, "type", "ClusterIP")
        for _, port in items_of(spec, "ports"):
            set_default_if_zero(port, "protocol", "TCP")
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
        if externally_accessible(spec):
            set_default_if_zero(spec, "externalTrafficPolicy", "Cluster")
        if spec["type"] in ("ClusterIP", "NodePort", "LoadBalancer"):
            set_default(spec, "internalTrafficPolicy", "Cluster")
        if spec["type"] == "LoadBalancer":
            set_default(spec, "allocateLoadBalancerNodePorts", True)
        if needs_cluster_ip(spec):
            _default_ip_families(spec)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validate_service_spec(as_dict(obj.get("spec")))

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateServiceUpdate: allocated values may only be added or released."""
        spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
        errors = _validate_cluster_ips_update(spec, old_spec)
        errors += _validate_ip_families_update(spec, old_spec)
        if service_type(spec) == service_type(old_spec) == "LoadBalancer" and spec.get(
            "loadBalancerClass"
        ) != old_spec.get("loadBalancerClass"):
            errors.append(
                invalid(
                    "spec.loadBalancerClass",
                    spec.get("loadBalancerClass"),
                    "may not change once set",
                )
            )
        if needs_health_check_node_port(old_spec) and needs_health_check_node_port(spec):
            if spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort"):
                errors.append(forbidden("spec.healthCheckNodePort", "field is immutable"))
        return errors + validate_service_spec(spec)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateLoadBalancerStatus: ingress points are IPs or host names."""
        errors: list[FieldError] = []
        ingress_path = "status.loadBalancer.ingress"
        load_balancer = as_dict(as_dict(new.get("status")).get("loadBalancer"))
        for i, ingress in items_of(load_balancer, "ingress"):
            item_path = index(ingress_path, i)
            if ingress.get("ip"):
                errors += ip_errors(ingress["ip"], child(item_path, "ip"))
            hostname = ingress.get("hostname")
            if hostname:
                errors += format_errors(
                    validate_dns1123_subdomain, hostname, child(item_path, "hostname")
                )
                if _is_ip(hostname):
                    errors.append(
                        invalid(
                            child(item_path, "hostname"),
                            hostname,
                            "must be a DNS name, not an IP address",
                        )
                    )
        return errors


# --- preparing updates -------------------------------------------------------------------


def _normalize_cluster_ips(spec: Obj, old_spec: Obj | None) -> None:
    """NormalizeClusterIPs: keep clusterIP and clusterIPs[0] telling the same story.

    Old clients only know the singular field; on create it fills the list, and on
    update a changed or cleared singular field carries over into an untouched list.
    """
    cluster_ip, cluster_ips = spec.get("clusterIP") or "", as_list(spec.get("clusterIPs"))
    if old_spec is None:
        if cluster_ip and not cluster_ips:
            spec["clusterIPs"] = [cluster_ip]
        return
    old_ips = as_list(old_spec.get("clusterIPs"))
    if not old_ips or cluster_ips != old_ips:
        return
    if not cluster_ip:
        spec.pop("clusterIPs", None)
    elif cluster_ip != old_ips[0]:
        spec["clusterIPs"] = [cluster_ip]


def _patch_allocated_values(spec: Obj, old_spec: Obj) -> None:
    """patchAllocatedValues: an update that omits cluster IPs or node ports keeps them."""
    if needs_cluster_ip(old_spec) and needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not as_list(spec.get("clusterIPs")) and as_list(old_spec.get("clusterIPs")):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
        for field in ("ipFamilies", "ipFamilyPolicy"):
            if spec.get(field) is None and old_spec.get(field) is not None:
                spec[field] = copy.deepcopy(old_spec[field])
    if needs_node_ports(old_spec) and needs_node_ports(spec):
        used = _node_ports(old_spec) & _node_ports(spec)
        by_name = {
            port.get("name", ""): port.get("nodePort")
            for _, port in items_of(old_spec, "ports")
            if isinstance(port.get("name", ""), str)
        }
        for _, port in items_of(spec, "ports"):
            name = port.get("name", "")
            old_value = by_name.get(name) if isinstance(name, str) else None
            if not port.get("nodePort") and old_value and old_value not in used:
                port["nodePort"] = old_value
    if needs_health_check_node_port(old_spec) and needs_health_check_node_port(spec):
        if not spec.get("healthCheckNodePort") and old_spec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


def _node_ports(spec: Obj) -> set[int]:
    return {
        port["nodePort"]
        for _, port in items_of(spec, "ports")
        if isinstance(port.get("nodePort"), int) and port["nodePort"]
    }


def _drop_type_dependent_fields(spec: Obj, old_spec: Obj) -> None:
    """dropTypeDependentFields: a new type that does not need a value frees it."""
    if needs_cluster_ip(old_spec) and not needs_cluster_ip(spec):
        if _same(spec, old_spec, "clusterIP") and _same(spec, old_spec, "clusterIPs"):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        for field in ("ipFamilies", "ipFamilyPolicy"):
            if _same(spec, old_spec, field):
                spec.pop(field, None)
    if needs_node_ports(old_spec) and not needs_node_ports(spec):
        if _node_ports(spec) == _node_ports(old_spec):
            for _, port in items_of(spec, "ports"):
                port.pop("nodePort", None)
    if needs_health_check_node_port(old_spec) and not needs_health_check_node_port(spec):
        if _same(spec, old_spec, "healthCheckNodePort"):
            spec.pop("healthCheckNodePort", None)
    if service_type(old_spec) == "LoadBalancer" and service_type(spec) != "LoadBalancer":
        for field in ("allocateLoadBalancerNodePorts", "loadBalancerClass"):
            if _same(spec, old_spec, field):
                spec.pop(field, None)
    if externally_accessible(old_spec) and not externally_accessible(spec):
        if _same(spec, old_spec, "externalTrafficPolicy"):
            spec.pop("externalTrafficPolicy", None)


def _same(spec: Obj, old_spec: Obj, field: str) -> bool:
    return spec.get(field) == old_spec.get(field)


def _default_ip_families(spec: Obj) -> None:
    """initIPFamilyFields: single stack, in the family of the cluster IP (IPv4 by default).

    A headless service without selector asks for both families, so that its manually
    managed endpoints may use either.
    """
    cluster_ips = [ip for ip in as_list(spec.get("clusterIPs")) if ip != NONE]
    if is_headless(spec) and not spec.get("selector"):
        set_default(spec, "ipFamilyPolicy", "RequireDualStack")
    set_default(spec, "ipFamilyPolicy", "SingleStack")
    if not as_list(spec.get("ipFamilies")):
        families = [_family(ip) for ip in cluster_ips if _is_ip(ip)]
        spec["ipFamilies"] = families or ["IPv4"]


def _family(ip: str) -> str:
    return "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"


def _is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


# --- validation --------------------------------------------------------------------------


def validate_service_spec(spec: Obj) -> list[FieldError]:
    """ValidateService (without metadata)."""
    errors: list[FieldError] = []
    kind = spec.get("type")
    headless = is_headless(spec)
    ports = list(items_of(spec, "ports"))
    if not ports and not headless and kind != "ExternalName":
        errors.append(required("spec.ports"))
    if kind in ("LoadBalancer", "NodePort") and headless:
        errors.append(
            invalid("spec.clusterIPs[0]", NONE, f"may not be set to 'None' for {kind} services")
        )
    if kind == "ExternalName":
        errors += _validate_external_name(spec)
    names: list[Any] = []
    for i, port in ports:
        errors += _validate_service_port(port, len(ports) > 1, names, index("spec.ports", i))
    if spec.get("selector") is not None:
        errors += validate_labels(as_dict(spec["selector"]), "spec.selector")
    errors += _validate_session_affinity(spec)
    if kind != "ExternalName":
        errors += _validate_cluster_ip_fields(spec)
    for i, ip in enumerate(as_list(spec.get("externalIPs"))):
        ip_path = index("spec.externalIPs", i)
        errors += ip_errors(ip, ip_path) or special_ip_errors(ip, ip_path)
    if not kind:
        errors.append(required("spec.type"))
    elif kind not in SERVICE_TYPES:
        errors.append(not_supported("spec.type", kind, SERVICE_TYPES))
    errors += _validate_port_uniqueness(spec, ports)
    errors += _validate_load_balancer_fields(spec)
    errors += _validate_traffic_policies(spec)
    return errors


def _validate_external_name(spec: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    for field in ("clusterIPs", "ipFamilies"):
        if as_list(spec.get(field)):
            errors.append(forbidden(f"spec.{field}", "may not be set for ExternalName services"))
    if spec.get("ipFamilyPolicy") is not None:
        errors.append(forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
    cname = str(spec.get("externalName") or "").removesuffix(".")
    if cname:
        errors += format_errors(validate_dns1123_subdomain, cname, "spec.externalName")
    else:
        errors.append(required("spec.externalName"))
    return errors


def _validate_service_port(
    port: Obj, require_name: bool, names: list[Any], path: str
) -> list[FieldError]:
    """validateServicePort."""
    errors: list[FieldError] = []
    name = port.get("name")
    if require_name and not name:
        errors.append(required(child(path, "name")))
    elif name:
        errors += format_errors(validate_dns1123_label, name, child(path, "name"))
        if name in names:
            errors.append(duplicate(child(path, "name"), name))
        else:
            names.append(name)
    errors += validate_port_number(port.get("port"), child(path, "port"))
    errors += required_enum(port.get("protocol"), PROTOCOLS, child(path, "protocol"))
    errors += port_num_or_name_errors(port.get("targetPort"), child(path, "targetPort"))
    if port.get("appProtocol") is not None:
        app_protocol = str(port["appProtocol"])
        errors += format_errors(validate_qualified_name, app_protocol, child(path, "appProtocol"))
    return errors


def _validate_session_affinity(spec: Obj) -> list[FieldError]:
    affinity = spec.get("sessionAffinity")
    if not affinity:
        return [required("spec.sessionAffinity")]
    if affinity not in SESSION_AFFINITIES:
        return [not_supported("spec.sessionAffinity", affinity, SESSION_AFFINITIES)]
    config = spec.get("sessionAffinityConfig")
    config_path = "spec.sessionAffinityConfig"
    if affinity == "None":
        if config is not None:
            return [forbidden(config_path, "must not be set when session affinity is None")]
        return []
    when = "when session affinity type is ClientIP"
    if config is None:
        return [required(config_path, when)]
    client_ip = as_dict(config).get("clientIP")
    if client_ip is None:
        return [required(child(config_path, "clientIP"), when)]
    timeout = as_dict(client_ip).get("timeoutSeconds")
    timeout_path = child(config_path, "clientIP", "timeoutSeconds")
    if timeout is None:
        return [required(timeout_path, when)]
    if not isinstance(timeout, int) or not 0 < timeout <= MAX_CLIENT_IP_TIMEOUT_SECONDS:
        return [
            invalid(
                timeout_path,
                timeout,
                f"must be greater than 0 and less than {MAX_CLIENT_IP_TIMEOUT_SECONDS}",
            )
        ]
    return []


def _validate_cluster_ip_fields(spec: Obj) -> list[FieldError]:
    """ValidateServiceClusterIPsRelatedFields."""
    errors: list[FieldError] = []
    cluster_ip, cluster_ips = spec.get("clusterIP") or "", as_list(spec.get("clusterIPs"))
    ips_path = "spec.clusterIPs"
    if cluster_ip:
        if not cluster_ips:
            errors.append(required(ips_path))
        elif cluster_ips[0] != cluster_ip:
            errors.append(invalid(ips_path, cluster_ips, "first value must match `clusterIP`"))
    elif cluster_ips:
        errors.append(
            invalid(ips_path, cluster_ips, "must be empty when `clusterIP` is not specified")
        )
    families = as_list(spec.get("ipFamilies"))
    seen: list[Any] = []
    for i, family in enumerate(families):
        if family not in IP_FAMILIES:
            errors.append(not_supported(index("spec.ipFamilies", i), family, IP_FAMILIES))
        if family in seen:
            errors.append(duplicate(index("spec.ipFamilies", i), family))
        seen.append(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        errors.append(not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    bad_ips = False
    for i, ip in enumerate(cluster_ips):
        if i == 0 and ip == NONE:
            if len(cluster_ips) > 1:
                bad_ips = True
                errors.append(
                    invalid(ips_path, cluster_ips, "'None' must be the first and only value")
                )
            continue
        ip_problems = ip_errors(ip, index(ips_path, i))
        bad_ips = bad_ips or bool(ip_problems)
        errors += ip_problems
    if len(cluster_ips) > 2:
        errors.append(invalid(ips_path, cluster_ips, "may only hold up to 2 values"))
    if bad_ips:
        return errors
    if len(cluster_ips) == 2 and _family(cluster_ips[0]) == _family(cluster_ips[1]):
        errors.append(
            invalid(ips_path, cluster_ips, "may specify no more than one IP for each IP family")
        )
    if not is_headless(spec):
        for i, (ip, family) in enumerate(zip(cluster_ips, families, strict=False)):
            if family in IP_FAMILIES and _family(ip) != family:
                errors.append(
                    invalid(
                        index(ips_path, i),
                        ip,
                        f"expected an {family} value as indicated by `ipFamilies[{i}]`",
                    )
                )
    return errors


def _validate_port_uniqueness(spec: Obj, ports: list[tuple[int, Obj]]) -> list[FieldError]:
    """No node ports for ClusterIP services; (protocol, port) and node ports unique."""
    errors: list[FieldError] = []
    node_ports: list[tuple[Any, Any]] = []
    service_ports: list[tuple[Any, Any]] = []
    for i, port in ports:
        port_path = index("spec.ports", i)
        node_port = port.get("nodePort")
        if spec.get("type") == "ClusterIP" and node_port:
            errors.append(
                forbidden(
                    child(port_path, "nodePort"), "may not be used when `type` is 'ClusterIP'"
                )
            )
        if node_port:
            if (port.get("protocol"), node_port) in node_ports:
                errors.append(duplicate(child(port_path, "nodePort"), node_port))
            node_ports.append((port.get("protocol"), node_port))
    for i, port in ports:
        entry = (port.get("protocol"), port.get("port"))
        if entry in service_ports:
            errors.append(
                duplicate(index("spec.ports", i), {"port": entry[1], "protocol": entry[0]})
            )
        service_ports.append(entry)
    return errors


def _validate_load_balancer_fields(spec: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    is_load_balancer = spec.get("type") == "LoadBalancer"
    only_for_load_balancers = "may only be used when `type` is 'LoadBalancer'"
    ranges = as_list(spec.get("loadBalancerSourceRanges"))
    if ranges:
        if not is_load_balancer:
            errors.append(forbidden("spec.LoadBalancerSourceRanges", only_for_load_balancers))
        for i, value in enumerate(ranges):
            errors += cidr_errors(str(value).strip(), index("spec.LoadBalancerSourceRanges", i))
    if spec.get("allocateLoadBalancerNodePorts") is not None and not is_load_balancer:
        errors.append(forbidden("spec.allocateLoadBalancerNodePorts", only_for_load_balancers))
    if is_load_balancer and spec.get("allocateLoadBalancerNodePorts") is None:
        errors.append(required("allocateLoadBalancerNodePorts"))
    load_balancer_class = spec.get("loadBalancerClass")
    if load_balancer_class is not None:
        if is_load_balancer:
            errors += format_errors(
                validate_qualified_name, load_balancer_class, "spec.loadBalancerClass"
            )
        else:
            errors.append(forbidden("spec.loadBalancerClass", only_for_load_balancers))
    return errors


def _validate_traffic_policies(spec: Obj) -> list[FieldError]:
    """validateServiceExternalTrafficPolicy and the internal policy and distribution."""
    errors: list[FieldError] = []
    external = spec.get("externalTrafficPolicy")
    if not externally_accessible(spec):
        if external:
            errors.append(
                invalid(
                    "spec.externalTrafficPolicy",
                    external,
                    "may only be set for externally-accessible services",
                )
            )
    elif not external:
        errors.append(required("spec.externalTrafficPolicy"))
    elif external not in TRAFFIC_POLICIES:
        errors.append(not_supported("spec.externalTrafficPolicy", external, TRAFFIC_POLICIES))
    health_port = spec.get("healthCheckNodePort")
    if not needs_health_check_node_port(spec):
        if health_port:
            errors.append(
                invalid(
                    "spec.healthCheckNodePort",
                    health_port,
                    "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` "
                    "is 'Local'",
                )
            )
    elif not health_port:
        errors.append(required("spec.healthCheckNodePort"))
    else:
        errors += validate_port_number(health_port, "spec.healthCheckNodePort")
    internal = spec.get("internalTrafficPolicy")
    if internal is None:
        if spec.get("type") in ("NodePort", "LoadBalancer", "ClusterIP"):
            errors.append(required("spec.internalTrafficPolicy"))
    elif internal not in TRAFFIC_POLICIES:
        errors.append(not_supported("spec.internalTrafficPolicy", internal, TRAFFIC_POLICIES))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution not in TRAFFIC_DISTRIBUTIONS:
        errors.append(
            not_supported("spec.trafficDistribution", distribution, TRAFFIC_DISTRIBUTIONS)
        )
    return errors


def _validate_cluster_ips_update(spec: Obj, old_spec: Obj) -> list[FieldError]:
    """validateUpgradeDowngradeClusterIPs: a cluster IP, once set, never changes."""
    if "ExternalName" in (spec.get("type"), old_spec.get("type")):
        return []
    if is_headless(spec) and is_headless(old_spec):
        return []
    new_ips, old_ips = as_list(spec.get("clusterIPs")), as_list(old_spec.get("clusterIPs"))
    errors: list[FieldError] = []
    if len(new_ips) == len(old_ips):
        for i, ip in enumerate(old_ips):
            if ip != new_ips[i]:
                errors.append(
                    invalid(index("spec.clusterIPs", i), new_ips, "may not change once set")
                )
    elif len(old_ips) > len(new_ips):
        if not new_ips:
            errors.append(
                invalid("spec.clusterIPs[0]", new_ips, "primary clusterIP can not be unset")
            )
        elif new_ips[0] != old_ips[0]:
            errors.append(invalid("spec.clusterIPs[0]", new_ips, "may not change once set"))
        if len(new_ips) == 1 and spec.get("ipFamilyPolicy") != "SingleStack":
            errors.append(
                invalid(
                    "spec.ipFamilyPolicy",
                    spec.get("ipFamilyPolicy"),
                    "must be set to 'SingleStack' when releasing the secondary clusterIP",
                )
            )
    elif old_ips and new_ips[0] != old_ips[0]:
        errors.append(invalid("spec.clusterIPs[0]", new_ips, "may not change once set"))
    return errors


def _validate_ip_families_update(spec: Obj, old_spec: Obj) -> list[FieldError]:
    """validateUpgradeDowngradeIPFamilies: the primary family never changes."""
    if "ExternalName" in (spec.get("type"), old_spec.get("type")):
        return []
    if is_headless(spec) or is_headless(old_spec):
        return []
    new, old = as_list(spec.get("ipFamilies")), as_list(old_spec.get("ipFamilies"))
    errors: list[FieldError] = []
    if len(new) == len(old):
        if new != old:
            errors.append(invalid("spec.ipFamilies[0]", new, "may not change once set"))
    elif len(old) > len(new):
        if not as_list(spec.get("clusterIPs")):
            errors.append(invalid("spec.ipFamilies[0]", new, "primary ipFamily can not be unset"))
        if new and new[0] != old[0]:
            errors.append(invalid("spec.ipFamilies[0]", new, "may not change once set"))
        if len(new) == 1 and spec.get("ipFamilyPolicy") != "SingleStack":
            errors.append(
                invalid(
                    "spec.ipFamilyPolicy",
                    spec.get("ipFamilyPolicy"),
                    "must be set to 'SingleStack' when releasing the secondary ipFamily",
                )
            )
    elif old and new[0] != old[0]:
        errors.append(invalid("spec.ipFamilies[0]", new, "may not change once set"))
    return errors
