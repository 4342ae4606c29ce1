"""The containers of a pod or a pod template, as describe writes them (describe.go:
describeContainers and its helpers): image and ports, command and args, state (a
pod's only), resources, probes, environment and mounts."""

from __future__ import annotations

import json
import re

from minikube_py.api import Obj
from minikube_py.mkctl.describers.common import go_bool, print_bool, string_or_none
from minikube_py.mkctl.describers.writer import (
    LEVEL_0,
    LEVEL_1,
    LEVEL_2,
    LEVEL_3,
    PrefixWriter,
    rfc1123z,
)


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
