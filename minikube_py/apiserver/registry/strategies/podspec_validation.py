"""Validation of a pod spec and a pod template (upstream ValidatePodSpec, ValidatePodTemplateSpec).

The containers are checked in `container_validation`; this module checks the pod-level
fields: volumes, policies, scheduling constraints (node selector, affinity, tolerations,
topology spread, scheduling gates), DNS settings and the pod's security context.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list, items_of
from minikube_py.api.poddefaults import volume_sources
from minikube_py.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_annotations,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_label_selector,
    validate_label_value,
    validate_labels,
    validate_qualified_name,
    validate_quantity,
)
from minikube_py.apiserver.registry.strategies.container_validation import (
    id_errors,
    local_descending_path_errors,
    validate_containers,
    validate_ephemeral_containers,
    validate_init_containers,
    validate_object_field_selector,
    validate_resource_field_selector,
)
from minikube_py.apiserver.registry.strategies.fields import (
    MAX_INT32,
    child,
    format_errors,
    index,
    ip_errors,
    one_of_errors,
    required_enum,
    validate_range,
)

RESTART_POLICIES = ["Always", "OnFailure", "Never"]
DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]
TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
HOST_PATH_TYPES = [
    "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
    "Socket",
]  # fmt: skip
VOLUME_FIELD_PATHS = [
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
    "metadata.uid",
]  # fmt: skip
FILE_MODE_MESSAGE = "must be a number between 0 and 0777 (octal), both inclusive"


def validate_pod_template(template: Obj, path: str) -> list[FieldError]:
    """ValidatePodTemplateSpec: the template's labels and annotations, then its pod spec."""
    metadata = as_dict(template.get("metadata"))
    # Upstream reports template label errors under `template.labels`.
    errors = validate_labels(as_dict(metadata.get("labels")), child(path, "labels"))
    errors += validate_annotations(as_dict(metadata.get("annotations")), child(path, "annotations"))
    spec = as_dict(template.get("spec"))
    errors += validate_pod_spec(spec, child(path, "spec"), is_pod=False)
    if as_list(spec.get("ephemeralContainers")):
        errors.append(
            forbidden(
                child(path, "spec", "ephemeralContainers"),
                "ephemeral containers not allowed in pod template",
            )
        )
    return errors


def validate_pod_spec(spec: Obj, path: str, *, is_pod: bool) -> list[FieldError]:
    """ValidatePodSpec; `is_pod` is upstream's ResourceIsPod (a pod, not a template)."""
    errors: list[FieldError] = []
    grace_period = spec.get("terminationGracePeriodSeconds")
    if grace_period is None:
        errors.append(required(child(path, "terminationGracePeriodSeconds")))
    volumes, volume_errors = _validate_volumes(spec, child(path, "volumes"))
    errors += volume_errors
    errors += validate_containers(spec, volumes, grace_period, path)
    errors += validate_init_containers(spec, volumes, grace_period, path)
    errors += validate_ephemeral_containers(spec, volumes, path)
    errors += _validate_host_network_ports(spec, path, is_pod)
    errors += required_enum(
        spec.get("restartPolicy"), RESTART_POLICIES, child(path, "restartPolicy")
    )
    errors += required_enum(spec.get("dnsPolicy"), DNS_POLICIES, child(path, "dnsPolicy"))
    errors += validate_labels(as_dict(spec.get("nodeSelector")), child(path, "nodeSelector"))
    errors += _validate_pod_security_context(
        as_dict(spec.get("securityContext")), child(path, "securityContext")
    )
    errors += _validate_image_pull_secrets(spec, child(path, "imagePullSecrets"))
    errors += _validate_affinity(as_dict(spec.get("affinity")), child(path, "affinity"))
    errors += _validate_dns_config(spec, child(path, "dnsConfig"))
    for i, gate in items_of(spec, "readinessGates"):
        gate_path = child(index(child(path, "readinessGates"), i), "conditionType")
        condition = str(gate.get("conditionType", ""))
        errors += format_errors(validate_qualified_name, condition, gate_path)
    errors += _validate_scheduling_gates(spec, child(path, "schedulingGates"))
    errors += _validate_topology_spread(spec, child(path, "topologySpreadConstraints"))
    for field, validator in (
        ("serviceAccountName", validate_dns1123_subdomain),
        ("nodeName", validate_dns1123_subdomain),
        ("hostname", validate_dns1123_label),
        ("subdomain", validate_dns1123_label),
        ("priorityClassName", validate_dns1123_subdomain),
    ):
        if spec.get(field):
            errors += format_errors(validator, spec[field], child(path, field))
    if spec.get("activeDeadlineSeconds") is not None:
        errors += validate_range(
            spec["activeDeadlineSeconds"], 1, MAX_INT32, child(path, "activeDeadlineSeconds")
        )
    errors += validate_tolerations(as_list(spec.get("tolerations")), child(path, "tolerations"))
    for i, alias in items_of(spec, "hostAliases"):
        alias_path = index(child(path, "hostAliases"), i)
        errors += ip_errors(alias.get("ip"), child(alias_path, "ip"))
        for j, hostname in enumerate(as_list(alias.get("hostnames"))):
            errors += format_errors(
                validate_dns1123_subdomain, hostname, index(child(alias_path, "hostnames"), j)
            )
    if spec.get("runtimeClassName") is not None:
        errors += format_errors(
            validate_dns1123_subdomain, spec["runtimeClassName"], child(path, "runtimeClassName")
        )
    if spec.get("preemptionPolicy") is not None:
        errors += required_enum(
            spec["preemptionPolicy"], PREEMPTION_POLICIES, child(path, "preemptionPolicy")
        )
    return errors


# --- volumes -----------------------------------------------------------------------------


def _validate_volumes(spec: Obj, path: str) -> tuple[dict[str, Obj], list[FieldError]]:
    """ValidateVolumes: unique DNS-label names, exactly one source each.

    Returns the volumes that passed, by name: the only ones volume mounts may use.
    """
    volumes: dict[str, Obj] = {}
    errors: list[FieldError] = []
    for i, volume in items_of(spec, "volumes"):
        volume_path = index(path, i)
        volume_errors = _validate_volume_source(volume, volume_path)
        name = volume.get("name")
        if not name:
            volume_errors.append(required(child(volume_path, "name")))
        else:
            volume_errors += format_errors(validate_dns1123_label, name, child(volume_path, "name"))
        if isinstance(name, str) and name in volumes:
            volume_errors.append(duplicate(child(volume_path, "name"), name))
        if volume_errors:
            errors += volume_errors
        else:
            volumes[name] = volume
    return volumes, errors


def _validate_volume_source(volume: Obj, path: str) -> list[FieldError]:
    sources = volume_sources(volume)
    errors = one_of_errors(sources, path, "volume")
    if not sources:
        return errors
    kind = sources[0]
    source = as_dict(volume[kind])
    source_path = child(path, kind)
    if kind == "hostPath":
        if not source.get("path"):
            return errors + [required(child(source_path, "path"))]
        if ".." in str(source["path"]).split("/"):
            errors.append(
                invalid(child(source_path, "path"), source["path"], "must not contain '..'")
            )
        host_path_type = source.get("type")
        if host_path_type is not None and host_path_type not in HOST_PATH_TYPES:
            errors.append(
                not_supported(child(source_path, "type"), host_path_type, HOST_PATH_TYPES)
            )
    elif kind == "emptyDir" and source.get("sizeLimit") is not None:
        size_errors = validate_quantity(source["sizeLimit"], child(source_path, "sizeLimit"))
        if size_errors or str(source["sizeLimit"]).startswith("-"):
            errors.append(
                forbidden(
                    child(source_path, "sizeLimit"),
                    "SizeLimit field must be a valid resource quantity",
                )
            )
    elif kind in ("secret", "configMap"):
        name_field = "secretName" if kind == "secret" else "name"
        if not source.get(name_field):
            errors.append(required(child(source_path, name_field)))
        errors += _validate_file_mode(source.get("defaultMode"), child(source_path, "defaultMode"))
        for j, item in items_of(source, "items"):
            errors += _validate_key_to_path(item, index(child(source_path, "items"), j))
    elif kind == "persistentVolumeClaim" and not source.get("claimName"):
        errors.append(required(child(source_path, "claimName")))
    elif kind == "downwardAPI":
        errors += _validate_file_mode(source.get("defaultMode"), child(source_path, "defaultMode"))
        for j, item in items_of(source, "items"):
            errors += _validate_downward_api_item(item, index(child(source_path, "items"), j))
    elif kind == "projected":
        errors += _validate_file_mode(source.get("defaultMode"), child(source_path, "defaultMode"))
    return errors


def _validate_file_mode(mode: Any, path: str) -> list[FieldError]:
    if mode is not None and (not isinstance(mode, int) or not 0 <= mode <= 0o777):
        return [invalid(path, mode, FILE_MODE_MESSAGE)]
    return []


def _validate_key_to_path(item: Obj, path: str) -> list[FieldError]:
    """validateKeyToPath: an item of a configMap or secret volume."""
    errors: list[FieldError] = []
    if not item.get("key"):
        errors.append(required(child(path, "key")))
    target = str(item.get("path") or "")
    if not target:
        errors.append(required(child(path, "path")))
    errors += _local_non_reserved_path_errors(target, child(path, "path"))
    errors += _validate_file_mode(item.get("mode"), child(path, "mode"))
    return errors


def _local_non_reserved_path_errors(target: str, path: str) -> list[FieldError]:
    errors = local_descending_path_errors(target, path)
    if target.startswith(".."):
        errors.append(invalid(path, target, "must not start with '..'"))
    return errors


def _validate_downward_api_item(item: Obj, path: str) -> list[FieldError]:
    target = str(item.get("path") or "")
    errors: list[FieldError] = []
    if not target:
        errors.append(required(child(path, "path")))
    errors += _local_non_reserved_path_errors(target, child(path, "path"))
    errors += _validate_file_mode(item.get("mode"), child(path, "mode"))
    has_field = item.get("fieldRef") is not None
    has_resource = item.get("resourceFieldRef") is not None
    if has_field:
        errors += validate_object_field_selector(
            as_dict(item["fieldRef"]), VOLUME_FIELD_PATHS, child(path, "fieldRef")
        )
    if has_resource:
        errors += validate_resource_field_selector(
            as_dict(item["resourceFieldRef"]), child(path, "resourceFieldRef"), volume=True
        )
    if has_field == has_resource:
        errors.append(
            required(path, "one and only one of fieldRef and resourceFieldRef must be specified")
        )
    return errors


# --- pod-level checks --------------------------------------------------------------------


def _validate_host_network_ports(spec: Obj, path: str, is_pod: bool) -> list[FieldError]:
    """validatePodHostNetworkDeps: with hostNetwork, a host port is the container port."""
    if not spec.get("hostNetwork"):
        return []
    errors: list[FieldError] = []
    for i, container in items_of(spec, "containers"):
        for j, port in items_of(container, "ports"):
            host_port, container_port = port.get("hostPort", 0), port.get("containerPort")
            if (is_pod or host_port) and host_port != container_port:
                port_path = index(child(index(child(path, "containers"), i), "ports"), j)
                errors.append(
                    invalid(
                        child(port_path, "hostPort"),
                        host_port,
                        "must match `containerPort` when `hostNetwork` is true",
                    )
                )
    return errors


def _validate_pod_security_context(context: Obj, path: str) -> list[FieldError]:
    """validatePodSpecSecurityContext (the user and group ids)."""
    errors: list[FieldError] = []
    for field in ("fsGroup", "runAsUser", "runAsGroup"):
        if context.get(field) is not None:
            errors += id_errors(context[field], child(path, field))
    for i, group in enumerate(as_list(context.get("supplementalGroups"))):
        errors += id_errors(group, index(child(path, "supplementalGroups"), i))
    return errors


def _validate_image_pull_secrets(spec: Obj, path: str) -> list[FieldError]:
    return [
        invalid(index(path, i), secret, "only name may be set")
        for i, secret in items_of(spec, "imagePullSecrets")
        if set(secret) - {"name"}
    ]


def _validate_dns_config(spec: Obj, path: str) -> list[FieldError]:
    """validatePodDNSConfig: dnsPolicy None needs nameservers; limits of resolv.conf."""
    config = spec.get("dnsConfig")
    if spec.get("dnsPolicy") == "None":
        if config is None:
            return [required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not as_list(as_dict(config).get("nameservers")):
            return [
                required(
                    child(path, "nameservers"),
                    "must provide at least one DNS nameserver when `dnsPolicy` is None",
                )
            ]
    if config is None:
        return []
    config = as_dict(config)
    errors: list[FieldError] = []
    nameservers = as_list(config.get("nameservers"))
    if len(nameservers) > 3:
        errors.append(
            invalid(
                child(path, "nameservers"), nameservers, "must not have more than 3 nameservers"
            )
        )
    for i, server in enumerate(nameservers):
        errors += ip_errors(server, index(child(path, "nameservers"), i))
    searches = as_list(config.get("searches"))
    if len(searches) > 32:
        errors.append(
            invalid(child(path, "searches"), searches, "must not have more than 32 search paths")
        )
    for i, search in enumerate(searches):
        domain = str(search).removesuffix(".")
        errors += format_errors(
            validate_dns1123_subdomain, domain, index(child(path, "searches"), i)
        )
    for i, option in items_of(config, "options"):
        if not option.get("name"):
            errors.append(required(index(child(path, "options"), i), "must not be empty"))
    return errors


def _validate_scheduling_gates(spec: Obj, path: str) -> list[FieldError]:
    """validateSchedulingGates: qualified names, no duplicates."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, gate in items_of(spec, "schedulingGates"):
        name = str(gate.get("name", ""))
        errors += format_errors(validate_qualified_name, name, index(path, i))
        if name in seen:
            errors.append(duplicate(index(path, i), name))
        seen.add(name)
    return errors


def validate_tolerations(tolerations: list[Any], path: str) -> list[FieldError]:
    """ValidateTolerations."""
    errors: list[FieldError] = []
    for i, toleration in enumerate(tolerations):
        toleration = as_dict(toleration)
        item_path = index(path, i)
        toleration_key = toleration.get("key") or ""
        operator = toleration.get("operator") or ""
        value = toleration.get("value") or ""
        effect = toleration.get("effect") or ""
        if toleration_key:
            errors += format_errors(
                validate_qualified_name, toleration_key, child(item_path, "key")
            )
        if not toleration_key and operator != "Exists":
            errors.append(
                invalid(
                    child(item_path, "operator"),
                    operator,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errors.append(
                invalid(
                    child(item_path, "effect"),
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", ""):
            messages = validate_label_value(str(value))
            if messages:
                errors.append(invalid(child(item_path, "operator"), value, ";".join(messages)))
        elif operator == "Exists":
            if value:
                errors.append(
                    invalid(
                        child(item_path, "operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            errors.append(
                not_supported(child(item_path, "operator"), operator, ["Equal", "Exists"])
            )
        if effect and effect not in TAINT_EFFECTS:
            errors.append(not_supported(child(item_path, "effect"), effect, TAINT_EFFECTS))
    return errors


# --- affinity and topology spread -------------------------------------------------------


def _validate_affinity(affinity: Obj, path: str) -> list[FieldError]:
    """validateAffinity: node affinity terms and pod (anti-)affinity terms."""
    errors: list[FieldError] = []
    node = as_dict(affinity.get("nodeAffinity"))
    required_selector = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    node_path = child(path, "nodeAffinity")
    if required_selector is not None:
        terms_path = child(
            node_path, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"
        )
        terms = as_list(as_dict(required_selector).get("nodeSelectorTerms"))
        if not terms:
            errors.append(required(terms_path, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            errors += _validate_node_selector_term(as_dict(term), index(terms_path, i), strict=True)
    preferred_path = child(node_path, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in items_of(node, "preferredDuringSchedulingIgnoredDuringExecution"):
        errors += _validate_weight(term, index(preferred_path, i))
        errors += _validate_node_selector_term(
            as_dict(term.get("preference")),
            child(index(preferred_path, i), "preference"),
            strict=False,
        )
    for kind in ("podAffinity", "podAntiAffinity"):
        pod_affinity = as_dict(affinity.get(kind))
        kind_path = child(path, kind)
        required_path = child(kind_path, "requiredDuringSchedulingIgnoredDuringExecution")
        for i, term in items_of(pod_affinity, "requiredDuringSchedulingIgnoredDuringExecution"):
            errors += _validate_pod_affinity_term(term, index(required_path, i))
        weighted_path = child(kind_path, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, term in items_of(pod_affinity, "preferredDuringSchedulingIgnoredDuringExecution"):
            errors += _validate_weight(term, index(weighted_path, i))
            errors += _validate_pod_affinity_term(
                as_dict(term.get("podAffinityTerm")),
                child(index(weighted_path, i), "podAffinityTerm"),
            )
    return errors


def _validate_weight(term: Obj, path: str) -> list[FieldError]:
    weight = term.get("weight")
    if not isinstance(weight, int) or not 1 <= weight <= 100:
        return [invalid(child(path, "weight"), weight, "must be in the range 1-100")]
    return []


def _validate_node_selector_term(term: Obj, path: str, strict: bool) -> list[FieldError]:
    """ValidateNodeSelectorTerm; preferred terms tolerate bad label values (`strict=False`)."""
    errors: list[FieldError] = []
    for i, requirement in items_of(term, "matchExpressions"):
        req_path = index(child(path, "matchExpressions"), i)
        operator = requirement.get("operator")
        values = as_list(requirement.get("values"))
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(
                    required(
                        child(req_path, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    )
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    forbidden(
                        child(req_path, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        elif operator in ("Gt", "Lt"):
            if len(values) != 1:
                errors.append(
                    required(
                        child(req_path, "values"),
                        "must be specified single value when `operator` is 'Lt' or 'Gt'",
                    )
                )
        else:
            errors.append(
                invalid(child(req_path, "operator"), operator, "not a valid selector operator")
            )
        requirement_key = str(requirement.get("key", ""))
        errors += format_errors(validate_qualified_name, requirement_key, child(req_path, "key"))
        if strict:
            for j, value in enumerate(values):
                errors += format_errors(
                    validate_label_value, value, index(child(req_path, "values"), j)
                )
    for i, requirement in items_of(term, "matchFields"):
        req_path = index(child(path, "matchFields"), i)
        if requirement.get("operator") not in ("In", "NotIn"):
            errors.append(
                invalid(
                    child(req_path, "operator"),
                    requirement.get("operator"),
                    "not a valid selector operator",
                )
            )
        elif len(as_list(requirement.get("values"))) != 1:
            errors.append(
                required(
                    child(req_path, "values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector",
                )
            )
        if requirement.get("key") != "metadata.name":
            errors.append(
                invalid(
                    child(req_path, "key"), requirement.get("key"), "not a valid field selector key"
                )
            )
        else:
            for j, value in enumerate(as_list(requirement.get("values"))):
                errors += format_errors(
                    validate_dns1123_subdomain, value, index(child(req_path, "values"), j)
                )
    return errors


def _validate_pod_affinity_term(term: Obj, path: str) -> list[FieldError]:
    """validatePodAffinityTerm: selectors, namespaces and a topology key."""
    errors: list[FieldError] = []
    for selector_field in ("labelSelector", "namespaceSelector"):
        if term.get(selector_field) is not None:
            errors += validate_label_selector(
                as_dict(term[selector_field]), child(path, selector_field)
            )
    for namespace in as_list(term.get("namespaces")):
        errors += format_errors(validate_dns1123_label, namespace, child(path, "namespace"))
    topology_key = str(term.get("topologyKey") or "")
    if not topology_key:
        errors.append(required(child(path, "topologyKey"), "can not be empty"))
    errors += format_errors(validate_qualified_name, topology_key, child(path, "topologyKey"))
    return errors


def _validate_topology_spread(spec: Obj, path: str) -> list[FieldError]:
    """validateTopologySpreadConstraints."""
    errors: list[FieldError] = []
    constraints = list(items_of(spec, "topologySpreadConstraints"))
    for position, (i, constraint) in enumerate(constraints):
        item_path = index(path, i)
        max_skew = constraint.get("maxSkew")
        if not isinstance(max_skew, int) or max_skew <= 0:
            errors.append(
                invalid(child(item_path, "maxSkew"), max_skew, "must be greater than zero")
            )
        topology_key = str(constraint.get("topologyKey") or "")
        if not topology_key:
            errors.append(required(child(item_path, "topologyKey"), "can not be empty"))
        else:
            errors += format_errors(
                validate_qualified_name, topology_key, child(item_path, "topologyKey")
            )
        when = constraint.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            errors.append(
                not_supported(
                    child(item_path, "whenUnsatisfiable"), when, ["DoNotSchedule", "ScheduleAnyway"]
                )
            )
        for _, later in constraints[position + 1 :]:
            if (later.get("topologyKey"), later.get("whenUnsatisfiable")) == (topology_key, when):
                errors.append(duplicate(item_path, f"{{{topology_key}, {when}}}"))
                break
        if constraint.get("labelSelector") is not None:
            errors += validate_label_selector(
                as_dict(constraint["labelSelector"]), child(item_path, "labelSelector")
            )
    return errors
