"""A container's environment: service links, envFrom, env with $(VAR) expansion, downward API.

Upstream: pkg/kubelet/kubelet_pods.go (makeEnvironmentVariables, getServiceEnvVarMap,
podFieldSelectorRuntimeValue), pkg/kubelet/envvars (FromServices), pkg/fieldpath and
third_party/forked/golang/expansion. Every error here is a ContainerConfigError: the
kubelet shows it as the container's CreateContainerConfigError.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from collections.abc import Awaitable, Callable

from minikube_py.api import Obj
from minikube_py.api.validation import validate_qualified_name
from minikube_py.kubelet.resources import ResourceFieldError, resource_field_value

GetObject = Callable[[str, str], Awaitable[Obj | None]]

# The services every pod sees, whatever enableServiceLinks says (upstream masterServices).
MASTER_SERVICES = ("kubernetes",)
DEFAULT_NAMESPACE = "default"

# $$ escapes a dollar; $(NAME) is a reference; anything else is literal text.
_REFERENCE = re.compile(r"\$\$|\$\(([^)]*)\)")
_SUBSCRIPTED = re.compile(r"^(.+?)\['(.*)'\]$", re.DOTALL)


class ContainerConfigError(Exception):
    """The container's config cannot be made (a missing ConfigMap, Secret or key, a bad
    field path); the kubelet reports it as CreateContainerConfigError and retries."""


class FieldPathError(ValueError):
    """A fieldRef the kubelet cannot answer (unsupported field, bad subscript)."""


def expand(text: str, mapping: Callable[[str], str]) -> str:
    """expansion.Expand: replace each $(NAME) by mapping(NAME); $$ is a literal $."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return mapping(match.group(1))

    return _REFERENCE.sub(replace, text)


def mapping_for(*contexts: dict[str, str]) -> Callable[[str], str]:
    """expansion.MappingFuncFor: the first context holding the name wins; an unknown
    reference is left as written, $(NAME)."""

    def mapping(name: str) -> str:
        for context in contexts:
            if name in context:
                return context[name]
        return f"$({name})"

    return mapping


# -- service links ----------------------------------------------------------------------


def _env_name(name: str) -> str:
    """makeEnvVariableName: my-svc.x -> MY_SVC_X, and a leading digit gets a '_'."""
    converted = name.replace(".", "_").replace("-", "_").upper()
    return f"_{converted}" if converted[:1].isdigit() else converted


def _host_port(ip: str, port: int) -> str:
    """net.JoinHostPort: IPv6 addresses are bracketed."""
    try:
        is_v6 = ipaddress.ip_address(ip).version == 6
    except ValueError:
        is_v6 = ":" in ip
    return f"[{ip}]:{port}" if is_v6 else f"{ip}:{port}"


def service_env(service: Obj) -> list[tuple[str, str]]:
    """envvars.FromServices for one service: <NAME>_SERVICE_HOST/_PORT[_<PORT NAME>] and
    the Docker-link variables <NAME>_PORT, <NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]."""
    spec = service.get("spec") or {}
    cluster_ip = spec.get("clusterIP", "")
    ports = spec.get("ports") or []
    prefix = _env_name(service["metadata"]["name"])
    env = [(f"{prefix}_SERVICE_HOST", cluster_ip),
           (f"{prefix}_SERVICE_PORT", str(ports[0]["port"]))]
    env += [(f"{prefix}_SERVICE_PORT_{_env_name(port['name'])}", str(port["port"]))
            for port in ports if port.get("name")]
    for i, port in enumerate(ports):
        protocol = (port.get("protocol") or "TCP").lower()
        url = f"{protocol}://{_host_port(cluster_ip, port['port'])}"
        if i == 0:
            env.append((f"{prefix}_PORT", url))
        port_prefix = f"{prefix}_PORT_{port['port']}_{protocol.upper()}"
        env += [(port_prefix, url), (f"{port_prefix}_PROTO", protocol),
                (f"{port_prefix}_PORT", str(port["port"])), (f"{port_prefix}_ADDR", cluster_ip)]
    return env


def service_env_map(services: list[Obj], namespace: str,
                    enable_service_links: bool) -> dict[str, str]:
    """getServiceEnvVarMap: the variables of the services in the pod's namespace (when
    service links are enabled) and, always, of the master service default/kubernetes.
    Services without a cluster IP (headless, ExternalName) give none."""
    chosen: dict[str, Obj] = {}
    for service in services:
        spec = service.get("spec") or {}
        if spec.get("clusterIP") in (None, "", "None") or not spec.get("ports"):
            continue
        meta = service["metadata"]
        name = meta["name"]
        if meta.get("namespace") == DEFAULT_NAMESPACE and name in MASTER_SERVICES:
            chosen.setdefault(name, service)
        elif meta.get("namespace") == namespace and enable_service_links:
            chosen[name] = service
    return {key: value for name in sorted(chosen) for key, value in service_env(chosen[name])}


# -- downward API: pod fields -----------------------------------------------------------


def format_map(values: dict[str, str]) -> str:
    """fieldpath.FormatMap: one key="value" line per entry, keys sorted."""
    return "\n".join(f"{key}={_go_quote(values[key])}" for key in sorted(values))


def _go_quote(text: str) -> str:
    """%q of a Go string, for the characters labels and annotations hold."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return f'"{escaped}"'


def extract_field_path(pod: Obj, field_path: str) -> str:
    """fieldpath.ExtractFieldPathAsString: the metadata fields a downward API volume may
    project (name, namespace, uid, labels, annotations, or one label/annotation)."""
    meta = pod.get("metadata") or {}
    subscripted = _SUBSCRIPTED.match(field_path)
    if subscripted:
        path, key = subscripted.groups()
        if path not in ("metadata.annotations", "metadata.labels"):
            raise FieldPathError(f'fieldPath "{field_path}" does not support subscript')
        errors = validate_qualified_name(key.lower() if path == "metadata.annotations" else key)
        if errors:
            raise FieldPathError(
                f"invalid key subscript in {field_path}: {';'.join(errors)}")
        return (meta.get(path.split(".")[1]) or {}).get(key, "")
    if field_path in ("metadata.annotations", "metadata.labels"):
        return format_map(meta.get(field_path.split(".")[1]) or {})
    if field_path in ("metadata.name", "metadata.namespace", "metadata.uid"):
        return meta.get(field_path.split(".")[1], "")
    raise FieldPathError(f"unsupported fieldPath: {field_path}")


_SUPPORTED_FIELD_LABELS = (
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
    "metadata.uid", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName",
    "spec.schedulerName", "status.phase", "status.hostIP", "status.hostIPs", "status.podIP",
    "status.podIPs",
)


def _convert_field_label(api_version: str, label: str) -> str:
    """ConvertDownwardAPIFieldLabel: check the version and the field, map old names."""
    if api_version != "v1":
        raise FieldPathError(f"unsupported pod version: {api_version}")
    subscripted = _SUBSCRIPTED.match(label)
    if subscripted:
        if subscripted.group(1) in ("metadata.annotations", "metadata.labels"):
            return label
        raise FieldPathError(f"field label does not support subscript: {label}")
    if label == "spec.host":
        return "spec.nodeName"
    if label not in _SUPPORTED_FIELD_LABELS:
        raise FieldPathError(f"field label not supported: {label}")
    return label


def pod_field_value(pod: Obj, field_ref: Obj, *, pod_ip: str, pod_ips: list[str],
                    host_ip: str, node_name: str) -> str:
    """podFieldSelectorRuntimeValue: an env var's fieldRef; the node and the IPs come from
    the kubelet, the rest from the pod's metadata."""
    path = _convert_field_label(field_ref.get("apiVersion") or "v1", field_ref["fieldPath"])
    spec = pod.get("spec") or {}
    if pod_ips:
        pod_ip = pod_ips[0]
    runtime_values = {
        "spec.nodeName": spec.get("nodeName") or node_name,
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.hostIP": host_ip,
        "status.hostIPs": host_ip,
        "status.podIP": pod_ip,
        "status.podIPs": ",".join(pod_ips),
    }
    if path in runtime_values:
        return runtime_values[path]
    return extract_field_path(pod, path)


# -- makeEnvironmentVariables -------------------------------------------------------------


def _is_env_var_name(name: str) -> bool:
    """IsRelaxedEnvVarName: printable ASCII without '='; anything else cannot be an env
    entry ("NAME=value") at all."""
    return bool(name) and all(" " <= char <= "~" and char != "=" for char in name)


def _secret_text(secret: Obj, key: str) -> str | None:
    encoded = (secret.get("data") or {}).get(key)
    if encoded is None:
        return None
    return base64.b64decode(encoded).decode(errors="replace")


class _Sources:
    """The ConfigMaps and Secrets of one container's env, each fetched once."""

    def __init__(self, namespace: str, get_config_map: GetObject, get_secret: GetObject):
        self.namespace = namespace
        self._get = {"configmap": get_config_map, "secret": get_secret}
        self._seen: dict[tuple[str, str], Obj | None] = {}

    async def get(self, kind: str, name: str, optional: bool) -> Obj | None:
        """The object, None when missing and optional; raises `<kind> "name" not found`."""
        if (kind, name) not in self._seen:
            self._seen[kind, name] = await self._get[kind](self.namespace, name)
        found = self._seen[kind, name]
        if found is None and not optional:
            raise ContainerConfigError(f'{kind} "{name}" not found')
        return found


async def _value_from(source: Obj, pod: Obj, container: Obj, sources: _Sources, *,
                      pod_ip: str, pod_ips: list[str], host_ip: str, node_name: str,
                      allocatable: Obj) -> str | None:
    """Resolve one env var's valueFrom; None means an optional source is missing."""
    namespace = sources.namespace
    if "fieldRef" in source:
        try:
            return pod_field_value(pod, source["fieldRef"], pod_ip=pod_ip, pod_ips=pod_ips,
                                   host_ip=host_ip, node_name=node_name)
        except FieldPathError as error:
            raise ContainerConfigError(str(error)) from error
    if "resourceFieldRef" in source:
        selector = source["resourceFieldRef"]
        try:
            return resource_field_value(selector, pod, selector.get("containerName")
                                        or container["name"], allocatable)
        except ResourceFieldError as error:
            raise ContainerConfigError(str(error)) from error
    if "configMapKeyRef" in source:
        ref = source["configMapKeyRef"]
        optional = bool(ref.get("optional"))
        config_map = await sources.get("configmap", ref["name"], optional)
        value = (config_map.get("data") or {}).get(ref["key"]) if config_map else None
        if value is None and config_map is not None and not optional:
            raise ContainerConfigError(
                f"couldn't find key {ref['key']} in ConfigMap {namespace}/{ref['name']}")
        return value
    if "secretKeyRef" in source:
        ref = source["secretKeyRef"]
        optional = bool(ref.get("optional"))
        secret = await sources.get("secret", ref["name"], optional)
        value = _secret_text(secret, ref["key"]) if secret is not None else None
        if value is None and secret is not None and not optional:
            raise ContainerConfigError(
                f"couldn't find key {ref['key']} in Secret {namespace}/{ref['name']}")
        return value
    return ""


async def make_environment(pod: Obj, container: Obj, *, get_config_map: GetObject,
                           get_secret: GetObject, services: list[Obj], pod_ip: str,
                           pod_ips: list[str], host_ip: str, node_name: str,
                           allocatable: Obj | None = None) -> list[tuple[str, str]]:
    """makeEnvironmentVariables: the container's env as (name, value) pairs.

    1. envFrom: every key of each ConfigMap/Secret (with the prefix); later ones win.
    2. env in order: a value has its $(VAR) references expanded against the variables
       so far and the service variables; valueFrom reads a ConfigMap or Secret key, a pod
       field or a resource. env overrides envFrom.
    3. The service link variables the container did not set itself.

    `services` should hold the services of the pod's namespace and default/kubernetes;
    `allocatable` (the node's) stands in for a resourceFieldRef to a missing limit.
    """
    spec = pod.get("spec") or {}
    namespace = pod["metadata"]["namespace"]
    service_vars = service_env_map(services, namespace, spec.get("enableServiceLinks", True)
                                   is not False)
    sources = _Sources(namespace, get_config_map, get_secret)
    env: dict[str, str] = {}

    for env_from in container.get("envFrom") or []:
        prefix = env_from.get("prefix", "")
        if "configMapRef" in env_from:
            ref = env_from["configMapRef"]
            config_map = await sources.get("configmap", ref["name"], bool(ref.get("optional")))
            values = (config_map or {}).get("data") or {}
        else:
            ref = env_from["secretRef"]
            secret = await sources.get("secret", ref["name"], bool(ref.get("optional")))
            values = {key: _secret_text(secret, key) or ""
                      for key in ((secret or {}).get("data") or {})}
        for key, value in values.items():
            if _is_env_var_name(prefix + key):
                env[prefix + key] = value

    mapping = mapping_for(env, service_vars)
    for var in container.get("env") or []:
        value: str | None = var.get("value", "")
        if value:
            value = expand(value, mapping)
        elif var.get("valueFrom"):
            value = await _value_from(var["valueFrom"], pod, container, sources,
                                      pod_ip=pod_ip, pod_ips=pod_ips, host_ip=host_ip,
                                      node_name=node_name, allocatable=allocatable or {})
            if value is None:
                continue
        env[var["name"]] = value

    return [*env.items(), *((key, value) for key, value in service_vars.items()
                            if key not in env)]
