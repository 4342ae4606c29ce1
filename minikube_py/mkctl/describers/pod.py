"""`describe pod` (describe.go: describePod and the container and volume printers it
uses; DescribePodTemplate reuses the containers and volumes for workloads).

    Name, Namespace, Priority, Service Account, Node, Start Time, Labels, Annotations,
    Status, IP, IPs, Controlled By
    Init Containers / Containers: image, ports, command, state, ready, restarts,
        limits, requests, probes, environment, mounts
    Conditions, Volumes, QoS Class, Node-Selectors, Tolerations, Events
"""

from __future__ import annotations

import json
import re
from typing import Any

from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    MAX_ANNOTATION_LEN,
    describe_events,
    go_bool,
    print_annotations_multiline,
    print_bool,
    print_controller,
    print_labels_multiline,
    print_tolerations_multiline,
    search_events,
    since,
    string_or_none,
)
from minikube_py.mkctl.describers.writer import (
    LEVEL_0,
    LEVEL_1,
    LEVEL_2,
    LEVEL_3,
    PrefixWriter,
    rfc1123z,
)

Obj = dict[str, Any]


MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def pod_describer(pod: Obj, lookups: Lookups, settings: Settings) -> str:
    """PodDescriber: the pod and its events (a mirror pod's events name the static pod's
    UID)."""
    meta = pod.get("metadata") or {}
    uid = (meta.get("annotations") or {}).get(MIRROR_POD_ANNOTATION) or meta.get("uid", "")
    events = search_events(lookups, meta.get("namespace", ""), meta.get("name", ""), "",
                           uid, settings)
    return describe_pod(pod, events)


def describe_pod(pod: Obj, events: list[Obj] | None) -> str:
    """describePod."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get(
        "status") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    if spec.get("priority") is not None:
        w.write(LEVEL_0, f"Priority:\t{spec['priority']}\n")
    if spec.get("priorityClassName"):
        w.write(LEVEL_0, f"Priority Class Name:\t{spec['priorityClassName']}\n")
    if spec.get("runtimeClassName"):
        w.write(LEVEL_0, f"Runtime Class Name:\t{spec['runtimeClassName']}\n")
    if spec.get("serviceAccountName"):
        w.write(LEVEL_0, f"Service Account:\t{spec['serviceAccountName']}\n")
    if spec.get("nodeName"):
        w.write(LEVEL_0, f"Node:\t{spec['nodeName']}/{status.get('hostIP', '')}\n")
    else:
        w.write(LEVEL_0, "Node:\t<none>\n")
    if status.get("startTime"):
        w.write(LEVEL_0, f"Start Time:\t{rfc1123z(status['startTime'])}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    phase = status.get("phase", "")
    if meta.get("deletionTimestamp") and phase not in ("Failed", "Succeeded"):
        w.write(LEVEL_0, f"Status:\tTerminating (lasts {since(meta['deletionTimestamp'])})\n")
        w.write(LEVEL_0, f"Termination Grace Period:\t{meta.get('deletionGracePeriodSeconds')}s\n")
    else:
        w.write(LEVEL_0, f"Status:\t{phase}\n")
    if status.get("reason"):
        w.write(LEVEL_0, f"Reason:\t{status['reason']}\n")
    if status.get("message"):
        w.write(LEVEL_0, f"Message:\t{status['message']}\n")
    seccomp = (spec.get("securityContext") or {}).get("seccompProfile")
    if seccomp is not None:
        w.write(LEVEL_0, f"SeccompProfile:\t{seccomp.get('type', '')}\n")
        if seccomp.get("type") == "Localhost":
            w.write(LEVEL_0, f"LocalhostProfile:\t{seccomp.get('localhostProfile', '')}\n")
    w.write(LEVEL_0, f"IP:\t{status.get('podIP', '')}\n")
    describe_pod_ips(status.get("podIPs"), w)
    controlled_by = print_controller(pod)
    if controlled_by:
        w.write(LEVEL_0, f"Controlled By:\t{controlled_by}\n")
    if status.get("nominatedNodeName"):
        w.write(LEVEL_0, f"NominatedNodeName:\t{status['nominatedNodeName']}\n")
    if spec.get("resources") is not None:
        w.write(LEVEL_0, "Resources:\n")
        describe_resources(spec["resources"], w, LEVEL_1)
    if spec.get("initContainers"):
        describe_containers("Init Containers", spec["initContainers"],
                            status.get("initContainerStatuses"), pod, w)
    describe_containers("Containers", spec.get("containers") or [],
                        status.get("containerStatuses"), pod, w)
    if spec.get("ephemeralContainers"):
        describe_containers("Ephemeral Containers", spec["ephemeralContainers"],
                            status.get("ephemeralContainerStatuses"), pod, w)
    conditions = status.get("conditions") or []
    if spec.get("readinessGates"):
        w.write(LEVEL_0, "Readiness Gates:\n  Type\tStatus\n")
        for gate in spec["readinessGates"]:
            found = next((c.get("status", "") for c in conditions
                          if c.get("type") == gate.get("conditionType")), "<none>")
            w.write(LEVEL_1, f"{gate.get('conditionType', '')} \t{found} \n")
    if conditions:
        w.write(LEVEL_0, "Conditions:\n  Type\tStatus\n")
        for condition in conditions:
            w.write(LEVEL_1, f"{condition.get('type', '')} \t{condition.get('status', '')} \n")
    describe_volumes(spec.get("volumes"), w)
    w.write(LEVEL_0, f"QoS Class:\t{status.get('qosClass') or compute_qos(spec)}\n")
    print_labels_multiline(w, "Node-Selectors", spec.get("nodeSelector"))
    print_tolerations_multiline(w, "Tolerations", spec.get("tolerations"))
    describe_topology_spread_constraints(spec.get("topologySpreadConstraints"), w)
    describe_events(events, w)
    return w.tabbed()


def describe_topology_spread_constraints(constraints: list[Obj] | None, w: PrefixWriter,
                                         space: str = "") -> None:
    """describeTopologySpreadConstraints: one line each, sorted by topology key."""
    if not constraints:
        return
    from minikube_py.api.selectors import label_selector_to_string

    w.write(LEVEL_0, f"{space}Topology Spread Constraints:\t")
    for index, tsc in enumerate(sorted(constraints, key=lambda c: c.get("topologyKey", ""))):
        if index:
            w.write(LEVEL_0, f"{space}\t")
        text = (f"{tsc.get('topologyKey', '')}:{tsc.get('whenUnsatisfiable', '')} when max "
                f"skew {tsc.get('maxSkew', 0)} is exceeded")
        if tsc.get("labelSelector") is not None:
            text += " for selector " + (label_selector_to_string(tsc["labelSelector"])
                                        or "<none>")
        w.write(LEVEL_0, text + "\n")


def describe_pod_ips(pod_ips: list[Obj] | None, w: PrefixWriter, space: str = "") -> None:
    if not pod_ips:
        w.write(LEVEL_0, f"{space}IPs:\t<none>\n")
        return
    w.write(LEVEL_0, f"{space}IPs:\n")
    for ip in pod_ips:
        w.write(LEVEL_1, f"IP:\t{ip.get('ip', '')}\n")


def compute_qos(spec: Obj) -> str:
    """qos.ComputePodQOS: BestEffort without cpu/memory requests or limits, Guaranteed
    when every container limits both and requests what it limits, else Burstable."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    guaranteed = True
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        own_requests = {k: v for k, v in (resources.get("requests") or {}).items()
                        if k in ("cpu", "memory")}
        own_limits = {k: v for k, v in (resources.get("limits") or {}).items()
                      if k in ("cpu", "memory")}
        requests.update(own_requests)
        limits.update(own_limits)
        if set(own_limits) != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        from minikube_py.api.quantity import Quantity

        for container in spec.get("containers") or []:
            resources = container.get("resources") or {}
            for name in ("cpu", "memory"):
                wanted = (resources.get("requests") or {}).get(name)
                if wanted is not None and Quantity.parse(wanted) != Quantity.parse(
                        resources["limits"][name]):
                    return "Burstable"
        return "Guaranteed"
    return "Burstable"


# -- containers ---------------------------------------------------------------------------

def describe_containers(label: str, containers: list[Obj], statuses: list[Obj] | None,
                        pod: Obj | None, w: PrefixWriter, space: str = "") -> None:
    """describeContainers: each container's image, ports, command, state, resources,
    probes, environment and mounts (the state only when the kubelet reported one)."""
    by_name = {status.get("name"): status for status in statuses or []}
    w.write(LEVEL_0, f"{space}{label}:{'' if containers else ' <none>'}\n")
    for container in containers:
        status = by_name.get(container.get("name"))
        _basic_info(container, status, space, w)
        _command(container, w)
        if status is not None:
            _state(status, w)
        describe_resources(container.get("resources") or {}, w, LEVEL_2)
        _probes(container, w)
        if container.get("envFrom"):
            _env_from(container, w)
        _env(container, pod, w)
        _mounts(container, w)


def _ports(ports: list[Obj], field: str) -> str:
    shown = []
    for port in ports:
        text = f"{port.get(field, 0)}/{port.get('protocol', '')}"
        if port.get("name"):
            text += f" ({port['name']})"
        shown.append(text)
    return ", ".join(shown)


def _basic_info(container: Obj, status: Obj | None, space: str, w: PrefixWriter) -> None:
    w.write(LEVEL_1, f"{' ' if space else ''}{container.get('name', '')}:\n")
    if status is not None:
        w.write(LEVEL_2, f"Container ID:\t{status.get('containerID', '')}\n")
    w.write(LEVEL_2, f"Image:\t{container.get('image', '')}\n")
    if status is not None:
        w.write(LEVEL_2, f"Image ID:\t{status.get('imageID', '')}\n")
    ports = container.get("ports") or []
    for title, text in (("Port", _ports(ports, "containerPort")),
                        ("Host Port", _ports(ports, "hostPort"))):
        if "," in text:
            w.write(LEVEL_2, f"{title}s:\t{text}\n")
        else:
            w.write(LEVEL_2, f"{title}:\t{string_or_none(text)}\n")
    seccomp = (container.get("securityContext") or {}).get("seccompProfile")
    if seccomp is not None:
        w.write(LEVEL_2, f"SeccompProfile:\t{seccomp.get('type', '')}\n")
        if seccomp.get("type") == "Localhost":
            w.write(LEVEL_3, f"LocalhostProfile:\t{seccomp.get('localhostProfile', '')}\n")


def _command(container: Obj, w: PrefixWriter) -> None:
    for title, field in (("Command", "command"), ("Args", "args")):
        if container.get(field):
            w.write(LEVEL_2, f"{title}:\n")
            for item in container[field]:
                for line in item.split("\n"):
                    w.write(LEVEL_3, f"{line}\n")


def describe_resources(resources: Obj, w: PrefixWriter, level: int) -> None:
    """describeResources: Limits, then Requests, each sorted by resource name."""
    for title, field in (("Limits", "limits"), ("Requests", "requests")):
        values = resources.get(field) or {}
        if values:
            w.write(level, f"{title}:\n")
        for name in sorted(values):
            w.write(level + 1, f"{name}:\t{values[name]}\n")


def _state(status: Obj, w: PrefixWriter) -> None:
    describe_status("State", status.get("state") or {}, w)
    last = status.get("lastState") or {}
    if last.get("terminated") is not None:
        describe_status("Last State", last, w)
    w.write(LEVEL_2, f"Ready:\t{print_bool(status.get('ready'))}\n")
    w.write(LEVEL_2, f"Restart Count:\t{status.get('restartCount', 0)}\n")


def describe_status(title: str, state: Obj, w: PrefixWriter) -> None:
    """describeStatus: Running (since), Waiting (why) or Terminated (how and when)."""
    if state.get("running") is not None:
        w.write(LEVEL_2, f"{title}:\tRunning\n")
        w.write(LEVEL_3, f"Started:\t{rfc1123z(state['running'].get('startedAt'))}\n")
    elif state.get("waiting") is not None:
        w.write(LEVEL_2, f"{title}:\tWaiting\n")
        if state["waiting"].get("reason"):
            w.write(LEVEL_3, f"Reason:\t{state['waiting']['reason']}\n")
    elif state.get("terminated") is not None:
        terminated = state["terminated"]
        w.write(LEVEL_2, f"{title}:\tTerminated\n")
        if terminated.get("reason"):
            w.write(LEVEL_3, f"Reason:\t{terminated['reason']}\n")
        if terminated.get("message"):
            w.write(LEVEL_3, f"Message:\t{terminated['message']}\n")
        w.write(LEVEL_3, f"Exit Code:\t{terminated.get('exitCode', 0)}\n")
        if (terminated.get("signal") or 0) > 0:
            w.write(LEVEL_3, f"Signal:\t{terminated['signal']}\n")
        w.write(LEVEL_3, f"Started:\t{rfc1123z(terminated.get('startedAt'))}\n")
        w.write(LEVEL_3, f"Finished:\t{rfc1123z(terminated.get('finishedAt'))}\n")
    else:
        w.write(LEVEL_2, f"{title}:\tWaiting\n")


def describe_probe(probe: Obj) -> str:
    """DescribeProbe: "http-get http://:8080/healthz delay=0s timeout=1s period=10s ..."."""
    attrs = (f"delay={probe.get('initialDelaySeconds', 0)}s "
             f"timeout={probe.get('timeoutSeconds', 0)}s period={probe.get('periodSeconds', 0)}s "
             f"successThreshold={probe.get('successThreshold', 0)} "
             f"failureThreshold={probe.get('failureThreshold', 0)}")
    if probe.get("exec") is not None:
        return f"exec [{' '.join(probe['exec'].get('command') or [])}] {attrs}"
    if probe.get("httpGet") is not None:
        get = probe["httpGet"]
        host, port = get.get("host", ""), str(get.get("port", ""))
        if port:
            host = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return f"http-get {get.get('scheme', '').lower()}://{host}{get.get('path', '')} {attrs}"
    if probe.get("tcpSocket") is not None:
        socket = probe["tcpSocket"]
        return f"tcp-socket {socket.get('host', '')}:{socket.get('port', '')} {attrs}"
    if probe.get("grpc") is not None:
        grpc = probe["grpc"]
        return f"grpc <pod>:{grpc.get('port', 0)} {grpc.get('service', '')} {attrs}"
    return f"unknown {attrs}"


def _probes(container: Obj, w: PrefixWriter) -> None:
    for title, field in (("Liveness", "livenessProbe"), ("Readiness", "readinessProbe"),
                         ("Startup", "startupProbe")):
        if container.get(field) is not None:
            w.write(LEVEL_2, f"{title}:\t{describe_probe(container[field])}\n")


_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.*)'\]$")


def _field_value(pod: Obj | None, path: str) -> str:
    """EnvValueRetriever: the value a fieldRef env var gets, as fieldpath.
    ExtractFieldPathAsString reads it: only the pod's metadata; "" for anything else
    and in a template."""
    if pod is None:
        return ""
    meta = pod.get("metadata") or {}
    subscript = _SUBSCRIPT.match(path)
    if subscript:
        return str((meta.get(subscript[1]) or {}).get(subscript[2], ""))
    field = path.removeprefix("metadata.")
    if path == field:
        return ""
    if field in ("labels", "annotations"):
        values = meta.get(field) or {}
        return "\n".join(f"{key}={json.dumps(values[key])}" for key in sorted(values))
    if field in ("generateName", "name", "namespace", "uid"):
        return str(meta.get(field, ""))
    return ""


def _resource_value(container: Obj, ref: Obj) -> str:
    """ExtractContainerResourceValue: a request or limit divided by the divisor."""
    from decimal import ROUND_CEILING

    from minikube_py.api.quantity import Quantity

    field, _, name = (ref.get("resource") or "").partition(".")
    value = ((container.get("resources") or {}).get(field) or {}).get(name)
    if value is None:
        return "0"
    divisor = Quantity.parse(ref.get("divisor") or "1").amount or 1
    return str(int((Quantity.parse(value).amount / divisor).to_integral_value(ROUND_CEILING)))


def _env(container: Obj, pod: Obj | None, w: PrefixWriter) -> None:
    env = container.get("env") or []
    w.write(LEVEL_2, f"Environment:{'' if env else chr(9) + '<none>'}\n")
    for var in env:
        name = var.get("name", "")
        source = var.get("valueFrom")
        if source is None:
            for index, line in enumerate((var.get("value") or "").split("\n")):
                w.write(LEVEL_3, f"{name}:\t{line}\n" if index == 0 else f"\t{line}\n")
        elif source.get("fieldRef") is not None:
            ref = source["fieldRef"]
            w.write(LEVEL_3, f"{name}:\t{_field_value(pod, ref.get('fieldPath', ''))} "
                             f"({ref.get('apiVersion', '')}:{ref.get('fieldPath', '')})\n")
        elif source.get("resourceFieldRef") is not None:
            ref = source["resourceFieldRef"]
            value = _resource_value(container, ref)
            if value == "0" and ref.get("resource") in ("limits.cpu", "limits.memory"):
                value = "node allocatable"
            w.write(LEVEL_3, f"{name}:\t{value} ({ref.get('resource', '')})\n")
        elif source.get("secretKeyRef") is not None:
            ref = source["secretKeyRef"]
            optional = go_bool(ref.get("optional"))
            w.write(LEVEL_3, f"{name}:\t<set to the key '{ref.get('key', '')}' in secret "
                             f"'{ref.get('name', '')}'>\tOptional: {optional}\n")
        elif source.get("configMapKeyRef") is not None:
            ref = source["configMapKeyRef"]
            optional = go_bool(ref.get("optional"))
            w.write(LEVEL_3, f"{name}:\t<set to the key '{ref.get('key', '')}' of config map "
                             f"'{ref.get('name', '')}'>\tOptional: {optional}\n")


def _env_from(container: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Environment Variables from:\n")
    for source in container["envFrom"]:
        kind, ref = "", {}
        if source.get("configMapRef") is not None:
            kind, ref = "ConfigMap", source["configMapRef"]
        elif source.get("secretRef") is not None:
            kind, ref = "Secret", source["secretRef"]
        if source.get("prefix"):
            kind += f" with prefix '{source['prefix']}'"
        w.write(LEVEL_3, f"{ref.get('name', '')}\t{kind}\tOptional: "
                         f"{go_bool(ref.get('optional'))}\n")


def _mounts(container: Obj, w: PrefixWriter) -> None:
    mounts = container.get("volumeMounts") or []
    none = "\t<none>" if not mounts else ""
    w.write(LEVEL_2, f"Mounts:{none}\n")
    for mount in sorted(mounts, key=lambda m: m.get("mountPath", "")):
        flags = ["ro" if mount.get("readOnly") else "rw"]
        if mount.get("subPath"):
            flags.append(f'path="{mount["subPath"]}"')
        w.write(LEVEL_3, f"{mount.get('mountPath', '')} from {mount.get('name', '')} "
                         f"({','.join(flags)})\n")
    devices = container.get("volumeDevices") or []
    if devices:
        w.write(LEVEL_2, f"Devices:{none}\n")
        for device in sorted(devices, key=lambda d: d.get("devicePath", "")):
            w.write(LEVEL_3, f"{device.get('devicePath', '')} from {device.get('name', '')}\n")


# -- volumes ------------------------------------------------------------------------------

def describe_volumes(volumes: list[Obj] | None, w: PrefixWriter, space: str = "") -> None:
    """describeVolumes: each volume's name, then its source's fields."""
    if not volumes:
        w.write(LEVEL_0, f"{space}Volumes:\t<none>\n")
        return
    w.write(LEVEL_0, f"{space}Volumes:\n")
    for volume in volumes:
        w.write(LEVEL_1, f"{' ' if space else ''}{volume.get('name', '')}:\n")
        for field, printer in _VOLUME_PRINTERS.items():
            if volume.get(field) is not None:
                printer(volume[field], w)
                break
        else:
            w.write(LEVEL_1, "<unknown>\n")


def _host_path(source: Obj, w: PrefixWriter) -> None:
    kind = source["type"] if source.get("type") is not None else "<none>"
    w.write(LEVEL_2, "Type:\tHostPath (bare host directory volume)\n"
                     f"    Path:\t{source.get('path', '')}\n    HostPathType:\t{kind}\n")


def _empty_dir(source: Obj, w: PrefixWriter) -> None:
    from minikube_py.api.quantity import Quantity

    limit = source.get("sizeLimit")
    shown = limit if limit is not None and Quantity.parse(limit).amount > 0 else "<unset>"
    w.write(LEVEL_2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n"
                     f"    Medium:\t{source.get('medium', '')}\n    SizeLimit:\t{shown}\n")


def _secret(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tSecret (a volume populated by a Secret)\n"
                     f"    SecretName:\t{source.get('secretName', '')}\n"
                     f"    Optional:\t{go_bool(source.get('optional'))}\n")


def _config_map(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tConfigMap (a volume populated by a ConfigMap)\n"
                     f"    Name:\t{source.get('name', '')}\n"
                     f"    Optional:\t{go_bool(source.get('optional'))}\n")


def _persistent_volume_claim(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tPersistentVolumeClaim (a reference to a PersistentVolumeClaim "
                     "in the same namespace)\n"
                     f"    ClaimName:\t{source.get('claimName', '')}\n"
                     f"    ReadOnly:\t{go_bool(source.get('readOnly'))}\n")


def _downward_api(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tDownwardAPI (a volume populated by information about the pod)\n"
                     "    Items:\n")
    for item in source.get("items") or []:
        if item.get("fieldRef") is not None:
            w.write(LEVEL_3, f"{item['fieldRef'].get('fieldPath', '')} -> {item.get('path', '')}\n")
        if item.get("resourceFieldRef") is not None:
            w.write(LEVEL_3, f"{item['resourceFieldRef'].get('resource', '')} -> "
                             f"{item.get('path', '')}\n")


def _projected(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tProjected (a volume that contains injected data from multiple "
                     "sources)\n")
    for item in source.get("sources") or []:
        if item.get("secret") is not None:
            w.write(LEVEL_2, f"SecretName:\t{item['secret'].get('name', '')}\n"
                             f"    Optional:\t{go_bool(item['secret'].get('optional'))}\n")
        elif item.get("downwardAPI") is not None:
            w.write(LEVEL_2, "DownwardAPI:\ttrue\n")
        elif item.get("configMap") is not None:
            w.write(LEVEL_2, f"ConfigMapName:\t{item['configMap'].get('name', '')}\n"
                             f"    Optional:\t{go_bool(item['configMap'].get('optional'))}\n")
        elif item.get("serviceAccountToken") is not None:
            w.write(LEVEL_2, "TokenExpirationSeconds:\t"
                             f"{item['serviceAccountToken'].get('expirationSeconds', 0)}\n")


def _nfs(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tNFS (an NFS mount that lasts the lifetime of a pod)\n"
                     f"    Server:\t{source.get('server', '')}\n"
                     f"    Path:\t{source.get('path', '')}\n"
                     f"    ReadOnly:\t{go_bool(source.get('readOnly'))}\n")


def _csi(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tCSI (a Container Storage Interface (CSI) volume source)\n"
                     f"    Driver:\t{source.get('driver', '')}\n"
                     f"    FSType:\t{source.get('fsType', '')}\n"
                     f"    ReadOnly:\t{go_bool(source.get('readOnly'))}\n")
    attributes = source.get("volumeAttributes") or {}
    w.write(LEVEL_2, "VolumeAttributes:\t")
    if not attributes:
        w.write_line("<none>")
        return
    for index, key in enumerate(sorted(attributes)):
        if index:
            w.write(LEVEL_2, "\t")
        line = f"{key}={attributes[key]}"
        w.write(LEVEL_2, f"{line[:MAX_ANNOTATION_LEN]}...\n" if len(line) > MAX_ANNOTATION_LEN
                else line + "\n")


def _image(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tImage (a container image or OCI artifact)\n"
                     f"    Reference:\t{source.get('reference', '')}\n"
                     f"    PullPolicy:\t{source.get('pullPolicy', '')}\n")


_VOLUME_PRINTERS = {  # in describeVolumes' order of precedence
    "hostPath": _host_path, "emptyDir": _empty_dir, "secret": _secret,
    "configMap": _config_map, "nfs": _nfs,
    "persistentVolumeClaim": _persistent_volume_claim, "downwardAPI": _downward_api,
    "projected": _projected, "csi": _csi, "image": _image,
}
