"""Validation of the containers of a pod spec (upstream core validation, validateContainers).

A container needs a DNS-label name unique in the pod and an image; its ports, env,
volume mounts, resources, probes and lifecycle hooks must be well formed, and its pull
and termination-message policies must be supported values.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list, items_of
from minikube_py.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_found,
    not_supported,
    required,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_nonnegative,
    validate_port_number,
    validate_qualified_name,
)
from minikube_py.apiserver.registry.strategies.fields import (
    PROTOCOLS,
    as_invalid,
    child,
    config_key_errors,
    format_errors,
    index,
    key,
    one_of_errors,
    port_name_errors,
    port_num_or_name_errors,
    required_enum,
)
from minikube_py.apiserver.registry.strategies.resourcenames import (
    QOS_RESOURCES,
    is_hugepages,
    overcommit_allowed,
    show_amount,
    validate_container_resource_name,
    validate_resource_amount,
)

PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
ENV_NAME_MESSAGE = (
    "a valid environment variable name must consist only of printable ASCII characters "
    "other than '='"
)
# IsRelaxedEnvVarName: printable ASCII (space to '~') except '='.
_RELAXED_ENV_NAME_RE = re.compile(r"[ -<>-~]*")
# The pod fields a container's env may read through the downward API.
ENV_FIELD_PATHS = [
    "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
    "status.podIPs",
]  # fmt: skip
_CONVERTIBLE_FIELD_PATHS = {
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
    "metadata.uid", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName",
    "spec.schedulerName", "status.phase", "status.hostIP", "status.hostIPs", "status.podIP",
    "status.podIPs",
}  # fmt: skip
_CONTAINER_RESOURCE_FIELDS = [
    "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
    "requests.ephemeral-storage", "requests.memory",
]  # fmt: skip
_INIT_ONLY_IF_RESTARTABLE = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")


def validate_containers(
    spec: Obj, volumes: dict[str, Obj], grace_period: Any, path: str
) -> list[FieldError]:
    """validateContainers: spec.containers is required; names unique; probes valid."""
    containers_path = child(path, "containers")
    if not as_list(spec.get("containers")):
        return [required(containers_path)]
    errors: list[FieldError] = []
    names: list[Any] = []
    for i, container in items_of(spec, "containers"):
        container_path = index(containers_path, i)
        errors += _validate_container_common(container, volumes, container_path)
        name = container.get("name")
        if name in names:
            errors.append(duplicate(child(container_path, "name"), name))
        else:
            names.append(name)
        errors += _validate_probes_and_hooks(container, grace_period, container_path)
        if container.get("restartPolicy") is not None:
            errors.append(
                forbidden(
                    child(container_path, "restartPolicy"), "may not be set for non-init containers"
                )
            )
    errors += _host_port_conflicts(list(items_of(spec, "containers")), containers_path)
    return errors


def validate_init_containers(
    spec: Obj, volumes: dict[str, Obj], grace_period: Any, path: str
) -> list[FieldError]:
    """validateInitContainers: names unique across all containers; sidecars may have probes."""
    init_path = child(path, "initContainers")
    errors: list[FieldError] = []
    names = [container.get("name") for _, container in items_of(spec, "containers")]
    for i, container in items_of(spec, "initContainers"):
        container_path = index(init_path, i)
        errors += _validate_container_common(container, volumes, container_path)
        restart_policy = container.get("restartPolicy")
        if restart_policy is not None and restart_policy != "Always":
            errors.append(
                not_supported(child(container_path, "restartPolicy"), restart_policy, ["Always"])
            )
        name = container.get("name")
        if name in names:
            errors.append(duplicate(child(container_path, "name"), name))
        elif name:
            names.append(name)
        errors += _host_port_conflicts([(i, container)], init_path)
        if restart_policy == "Always":
            errors += _validate_probes_and_hooks(container, grace_period, container_path)
        else:
            errors += [
                forbidden(
                    child(container_path, field),
                    "may not be set for init containers without restartPolicy=Always",
                )
                for field in _INIT_ONLY_IF_RESTARTABLE
                if container.get(field) is not None
            ]
    return errors


# What an ephemeral container may set (upstream's allowedEphemeralContainerFields): no
# ports, probes, lifecycle hooks, resources or restart policy, since nothing in the pod may
# come to depend on it.
_EPHEMERAL_ALLOWED = frozenset((
    "name", "image", "command", "args", "workingDir", "envFrom", "env", "volumeMounts",
    "volumeDevices", "terminationMessagePath", "terminationMessagePolicy",
    "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty",
    "targetContainerName"))
EPHEMERAL_FORBIDDEN = "cannot be set for an Ephemeral Container"


def validate_ephemeral_containers(spec: Obj, volumes: dict[str, Obj], path: str
                                  ) -> list[FieldError]:
    """validateEphemeralContainers: names unique across every kind of container, a target
    that is an app or init container, and only the allowed fields."""
    ephemeral_path = child(path, "ephemeralContainers")
    others = {c.get("name") for kind in ("containers", "initContainers")
              for _, c in items_of(spec, kind)}
    names = set(others)
    errors: list[FieldError] = []
    for i, container in items_of(spec, "ephemeralContainers"):
        container_path = index(ephemeral_path, i)
        errors += _validate_container_common(container, volumes, container_path)
        name = container.get("name")
        if name in names:
            errors.append(duplicate(child(container_path, "name"), name))
        else:
            names.add(name)
        target = container.get("targetContainerName")
        if target and target not in others:
            errors.append(not_found(child(container_path, "targetContainerName"), target))
        errors += [forbidden(child(container_path, field), EPHEMERAL_FORBIDDEN)
                   for field, value in container.items()
                   if field not in _EPHEMERAL_ALLOWED and value not in (None, "", [], {})]
        for j, mount in items_of(container, "volumeMounts"):
            for field in ("subPath", "subPathExpr"):
                if mount.get(field):
                    errors.append(forbidden(
                        child(index(child(container_path, "volumeMounts"), j), field),
                        EPHEMERAL_FORBIDDEN))
    return errors


def _validate_container_common(
    container: Obj, volumes: dict[str, Obj], path: str
) -> list[FieldError]:
    """validateContainerCommon: what every kind of container must satisfy."""
    errors: list[FieldError] = []
    name = container.get("name")
    name_path = child(path, "name")
    if not name:
        errors.append(required(name_path))
    else:
        errors += format_errors(validate_dns1123_label, name, name_path)
    if not container.get("image"):
        errors.append(required(child(path, "image")))
    errors += required_enum(
        container.get("terminationMessagePolicy"),
        TERMINATION_MESSAGE_POLICIES,
        child(path, "terminationMessagePolicy"),
    )
    errors += _validate_ports(container, child(path, "ports"))
    errors += _validate_env(container, child(path, "env"))
    errors += _validate_env_from(container, child(path, "envFrom"))
    errors += _validate_volume_mounts(container, volumes, child(path, "volumeMounts"))
    errors += required_enum(
        container.get("imagePullPolicy"), PULL_POLICIES, child(path, "imagePullPolicy")
    )
    errors += validate_resources(as_dict(container.get("resources")), child(path, "resources"))
    errors += _validate_security_context(
        as_dict(container.get("securityContext")), child(path, "securityContext")
    )
    return errors


def _validate_ports(container: Obj, path: str) -> list[FieldError]:
    """validateContainerPorts."""
    errors: list[FieldError] = []
    names: set[str] = set()
    for i, port in items_of(container, "ports"):
        port_path = index(path, i)
        name = port.get("name")
        if name:
            messages = port_name_errors(str(name))
            if messages:
                errors += as_invalid(child(port_path, "name"), name, messages)
            elif name in names:
                errors.append(duplicate(child(port_path, "name"), name))
            else:
                names.add(name)
        container_port = port.get("containerPort")
        if not container_port:
            errors.append(required(child(port_path, "containerPort")))
        else:
            errors += validate_port_number(container_port, child(port_path, "containerPort"))
        if port.get("hostPort"):
            errors += validate_port_number(port["hostPort"], child(port_path, "hostPort"))
        errors += required_enum(port.get("protocol"), PROTOCOLS, child(port_path, "protocol"))
    return errors


def _host_port_conflicts(containers: list[tuple[int, Obj]], path: str) -> list[FieldError]:
    """AccumulateUniqueHostPorts: one protocol/hostIP/hostPort per pod."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, container in containers:
        for j, port in items_of(container, "ports"):
            if not port.get("hostPort"):
                continue
            entry = f"{port.get('protocol', '')}/{port.get('hostIP', '')}/{port['hostPort']}"
            if entry in seen:
                errors.append(
                    duplicate(child(index(child(index(path, i), "ports"), j), "hostPort"), entry)
                )
            seen.add(entry)
    return errors


def _env_name_errors(value: str, path: str) -> list[FieldError]:
    """IsRelaxedEnvVarName: printable ASCII without '='."""
    if not _RELAXED_ENV_NAME_RE.fullmatch(value):
        return [invalid(path, value, ENV_NAME_MESSAGE)]
    return []


def _validate_env(container: Obj, path: str) -> list[FieldError]:
    """ValidateEnv: names, and a valueFrom with exactly one source."""
    errors: list[FieldError] = []
    for i, env in items_of(container, "env"):
        env_path = index(path, i)
        name = env.get("name")
        if not name:
            errors.append(required(child(env_path, "name")))
        else:
            errors += _env_name_errors(str(name), child(env_path, "name"))
        errors += _validate_env_value_from(env, child(env_path, "valueFrom"))
    return errors


def _validate_env_value_from(env: Obj, path: str) -> list[FieldError]:
    source = env.get("valueFrom")
    if source is None:
        return []
    source = as_dict(source)
    errors: list[FieldError] = []
    count = 0
    if source.get("fieldRef") is not None:
        count += 1
        errors += validate_object_field_selector(
            as_dict(source["fieldRef"]), ENV_FIELD_PATHS, child(path, "fieldRef")
        )
    if source.get("resourceFieldRef") is not None:
        count += 1
        errors += validate_resource_field_selector(
            as_dict(source["resourceFieldRef"]), child(path, "resourceFieldRef"), volume=False
        )
    for ref in ("configMapKeyRef", "secretKeyRef"):
        if source.get(ref) is not None:
            count += 1
            errors += _validate_key_selector(as_dict(source[ref]), child(path, ref))
    if count == 0:
        errors.append(
            invalid(
                path,
                "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                "`secretKeyRef`",
            )
        )
    elif env.get("value"):
        errors.append(invalid(path, "", "may not be specified when `value` is not empty"))
    elif count > 1:
        errors.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errors


def validate_object_field_selector(
    selector: Obj, allowed: list[str], path: str
) -> list[FieldError]:
    """validateObjectFieldSelector: a downward API fieldRef such as `metadata.name`."""
    api_version = selector.get("apiVersion")
    if not api_version:
        return [required(child(path, "apiVersion"))]
    field_path = selector.get("fieldPath")
    if not field_path:
        return [required(child(path, "fieldPath"))]
    field_path = str(field_path)
    subscripted = _split_subscript(field_path)
    if api_version != "v1":
        problem = f"unsupported pod version: {api_version}"
    elif subscripted and subscripted[0] not in ("metadata.annotations", "metadata.labels"):
        problem = f"field label does not support subscript: {field_path}"
    elif not subscripted and field_path not in _CONVERTIBLE_FIELD_PATHS | {"spec.host"}:
        problem = f"field label not supported: {field_path}"
    else:
        problem = ""
    if problem:
        return [
            invalid(child(path, "fieldPath"), field_path, f"error converting fieldPath: {problem}")
        ]
    if subscripted:
        base, subscript = subscripted
        label = subscript.lower() if base == "metadata.annotations" else subscript
        return format_errors(validate_qualified_name, label, path)
    internal = "spec.nodeName" if field_path == "spec.host" else field_path
    if internal not in allowed:
        return [not_supported(child(path, "fieldPath"), internal, sorted(allowed))]
    return []


def _split_subscript(field_path: str) -> tuple[str, str] | None:
    """`metadata.labels['app']` -> ("metadata.labels", "app")."""
    if not field_path.endswith("']"):
        return None
    base, bracket, rest = field_path.partition("['")
    if not bracket or not base:
        return None
    return base, rest[:-2]


def validate_resource_field_selector(selector: Obj, path: str, volume: bool) -> list[FieldError]:
    """validateContainerResourceFieldSelector: `limits.cpu` and friends."""
    resource = selector.get("resource")
    if volume and not selector.get("containerName"):
        return [required(child(path, "containerName"))]
    if not resource:
        return [required(child(path, "resource"))]
    if resource not in _CONTAINER_RESOURCE_FIELDS and not str(resource).startswith(
        ("requests.hugepages-", "limits.hugepages-")
    ):
        return [not_supported(child(path, "resource"), resource, _CONTAINER_RESOURCE_FIELDS)]
    return []


def _validate_key_selector(selector: Obj, path: str) -> list[FieldError]:
    """validateConfigMapKeySelector / validateSecretKeySelector."""
    name = str(selector.get("name", ""))
    errors = format_errors(validate_dns1123_subdomain, name, child(path, "name"))
    key_name = selector.get("key")
    if not key_name:
        errors.append(required(child(path, "key")))
    else:
        errors += format_errors(config_key_errors, key_name, child(path, "key"))
    return errors


def _validate_env_from(container: Obj, path: str) -> list[FieldError]:
    """ValidateEnvFrom: each entry names exactly one ConfigMap or Secret."""
    errors: list[FieldError] = []
    for i, source in items_of(container, "envFrom"):
        source_path = index(path, i)
        if source.get("prefix"):
            errors += _env_name_errors(str(source["prefix"]), child(source_path, "prefix"))
        refs = [ref for ref in ("configMapRef", "secretRef") if source.get(ref) is not None]
        for ref in refs:
            name = as_dict(source[ref]).get("name")
            name_path = child(source_path, ref, "name")
            if not name:
                errors.append(required(name_path))
            else:
                errors += format_errors(validate_dns1123_subdomain, name, name_path)
        if not refs:
            errors.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif len(refs) > 1:
            errors.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errors


def _validate_volume_mounts(container: Obj, volumes: dict[str, Obj], path: str) -> list[FieldError]:
    """ValidateVolumeMounts: every mount names a volume of the pod, at a unique path."""
    errors: list[FieldError] = []
    mount_paths: list[Any] = []
    for i, mount in items_of(container, "volumeMounts"):
        mount_path = index(path, i)
        name = mount.get("name")
        if not name:
            errors.append(required(child(mount_path, "name")))
        if not (isinstance(name, str) and name in volumes):
            errors.append(FieldError("NotFound", child(mount_path, "name"), "", name))
        target = mount.get("mountPath")
        if not target:
            errors.append(required(child(mount_path, "mountPath")))
        if target in mount_paths:
            errors.append(invalid(child(mount_path, "mountPath"), target, "must be unique"))
        mount_paths.append(target)
        if mount.get("subPath"):
            # Upstream reports subPath problems against the list, not the item.
            errors += local_descending_path_errors(str(mount["subPath"]), child(path, "subPath"))
        if mount.get("subPathExpr"):
            if mount.get("subPath"):
                errors.append(
                    invalid(
                        child(mount_path, "subPathExpr"),
                        mount["subPathExpr"],
                        "subPathExpr and subPath are mutually exclusive",
                    )
                )
            errors += local_descending_path_errors(
                str(mount["subPathExpr"]), child(path, "subPathExpr")
            )
        propagation = mount.get("mountPropagation")
        if propagation is not None and propagation not in (
            "None",
            "HostToContainer",
            "Bidirectional",
        ):
            errors.append(
                not_supported(
                    child(path, "mountPropagation"),
                    propagation,
                    ["Bidirectional", "HostToContainer", "None"],
                )
            )
    return errors


def local_descending_path_errors(target: str, path: str) -> list[FieldError]:
    """validateLocalDescendingPath: relative, and never climbing out with `..`."""
    errors = []
    if target.startswith("/"):
        errors.append(invalid(path, target, "must be a relative path"))
    if ".." in target.split("/"):
        errors.append(invalid(path, target, "must not contain '..'"))
    return errors


def validate_resources(resources: Obj, path: str) -> list[FieldError]:
    """ValidateContainerResourceRequirements: names, amounts, and requests <= limits."""
    errors: list[FieldError] = []
    limits_path, requests_path = child(path, "limits"), child(path, "requests")
    limits: dict[str, Decimal] = {}
    raw_limits = as_dict(resources.get("limits"))
    for name, value in raw_limits.items():
        name_path = key(limits_path, name)
        errors += validate_container_resource_name(name, name_path)
        amount, amount_errors = validate_resource_amount(name, value, name_path)
        errors += amount_errors
        if amount is not None:
            limits[name] = amount
    requests = as_dict(resources.get("requests"))
    for name, value in requests.items():
        name_path = key(requests_path, name)
        errors += validate_container_resource_name(name, name_path)
        amount, amount_errors = validate_resource_amount(name, value, name_path)
        errors += amount_errors
        if amount is None:
            continue
        if name in limits:
            shown, limit = show_amount(value), show_amount(raw_limits[name])
            if amount != limits[name] and not overcommit_allowed(name):
                errors.append(
                    invalid(requests_path, shown, f"must be equal to {name} limit of {limit}")
                )
            elif amount > limits[name]:
                errors.append(
                    invalid(
                        requests_path,
                        shown,
                        f"must be less than or equal to {name} limit of {limit}",
                    )
                )
        elif name not in raw_limits and not overcommit_allowed(name):
            errors.append(
                required(limits_path, "Limit must be set for non overcommitable resources")
            )
    names = set(raw_limits) | set(requests)
    if any(is_hugepages(name) for name in names) and not names & set(QOS_RESOURCES):
        errors.append(forbidden(path, "HugePages require cpu or memory"))
    return errors


def _validate_security_context(context: Obj, path: str) -> list[FieldError]:
    """ValidateSecurityContext (the user and group ids)."""
    errors: list[FieldError] = []
    for field in ("runAsUser", "runAsGroup"):
        if context.get(field) is not None:
            errors += id_errors(context[field], child(path, field))
    return errors


def id_errors(value: Any, path: str) -> list[FieldError]:
    """IsValidUserID / IsValidGroupID."""
    if not isinstance(value, int) or not 0 <= value <= 2**31 - 1:
        return [invalid(path, value, "must be between 0 and 2147483647, inclusive")]
    return []


# --- probes and lifecycle hooks ---------------------------------------------------------


def _validate_probes_and_hooks(container: Obj, grace_period: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if lifecycle.get(hook) is not None:
                errors += _validate_handler(
                    as_dict(lifecycle[hook]),
                    ("exec", "httpGet", "tcpSocket", "sleep"),
                    grace_period,
                    child(path, "lifecycle", hook),
                )
    for name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(name)
        if probe is None:
            continue
        probe = as_dict(probe)
        probe_path = child(path, name)
        errors += _validate_probe(probe, grace_period, probe_path)
        if name == "readinessProbe":
            if probe.get("terminationGracePeriodSeconds") is not None:
                errors.append(
                    invalid(
                        child(probe_path, "terminationGracePeriodSeconds"),
                        probe["terminationGracePeriodSeconds"],
                        "must not be set for readinessProbes",
                    )
                )
        elif probe.get("successThreshold") != 1:
            errors.append(
                invalid(
                    child(probe_path, "successThreshold"),
                    probe.get("successThreshold"),
                    "must be 1",
                )
            )
    return errors


def _validate_probe(probe: Obj, grace_period: Any, path: str) -> list[FieldError]:
    """validateProbe: one handler and non-negative timing."""
    errors = _validate_handler(probe, ("exec", "httpGet", "tcpSocket", "grpc"), grace_period, path)
    for field in (
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ):
        errors += validate_nonnegative(probe.get(field, 0), child(path, field))
    grace = probe.get("terminationGracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or grace <= 0):
        errors.append(
            invalid(child(path, "terminationGracePeriodSeconds"), grace, "must be greater than 0")
        )
    return errors


def _validate_handler(
    handler: Obj, kinds: tuple[str, ...], grace_period: Any, path: str
) -> list[FieldError]:
    """validateHandler: exactly one of exec, httpGet, tcpSocket, grpc or sleep."""
    present = [kind for kind in kinds if handler.get(kind) is not None]
    errors = one_of_errors(present, path, "handler")
    if not present:
        return errors
    kind = present[0]
    action = as_dict(handler[kind])
    action_path = child(path, kind)
    if kind == "exec" and not as_list(action.get("command")):
        errors.append(required(child(action_path, "command")))
    elif kind == "httpGet":
        if not action.get("path"):
            errors.append(required(child(action_path, "path")))
        errors += port_num_or_name_errors(action.get("port"), child(action_path, "port"))
        scheme = action.get("scheme")
        if scheme not in ("HTTP", "HTTPS"):
            errors.append(not_supported(child(action_path, "scheme"), scheme, ["HTTP", "HTTPS"]))
    elif kind == "tcpSocket":
        errors += port_num_or_name_errors(action.get("port"), child(action_path, "port"))
    elif kind == "grpc":
        errors += validate_port_number(action.get("port"), child(action_path, "port"))
    elif kind == "sleep":
        seconds = action.get("seconds")
        if isinstance(grace_period, int) and (
            not isinstance(seconds, int) or not 0 <= seconds <= grace_period
        ):
            errors.append(
                invalid(
                    action_path,
                    seconds,
                    "must be non-negative and less than terminationGracePeriodSeconds "
                    f"({grace_period})",
                )
            )
    return errors
