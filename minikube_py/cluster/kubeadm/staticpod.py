"""A control-plane static pod as kubeadm's util/staticpod writes it: hostNetwork,
system-node-critical, `component` and `tier: control-plane` labels, and probes on the
component's health endpoint; the manifest is written where the kubelet reads it, whole."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from minikube_py.api import Obj

NAMESPACE = "kube-system"
# kubeadm's default timeoutForControlPlane (4m0s) over the startup probe's period
STARTUP_FAILURE_THRESHOLD = 24


def probe(host: str | None, path: str, port: int | str, scheme: str) -> Obj:
    """An httpGet probe handler on host:port/path (no host: the pod's own address; a
    port may be a container port's name)."""
    handler: Obj = {"path": path, "port": port, "scheme": scheme}
    if host is not None:
        handler = {"host": host, **handler}
    return {"httpGet": handler}


def liveness_probe(host: str, path: str, port: int, scheme: str) -> Obj:
    """kubeadm's LivenessProbe: after 10s, every 10s, 15s timeout, 8 failures."""
    return {**probe(host, path, port, scheme), "initialDelaySeconds": 10,
            "timeoutSeconds": 15, "periodSeconds": 10, "failureThreshold": 8}


def readiness_probe(host: str, path: str, port: int, scheme: str) -> Obj:
    """kubeadm's ReadinessProbe: every second, 15s timeout, 3 failures."""
    return {**probe(host, path, port, scheme), "timeoutSeconds": 15, "periodSeconds": 1,
            "failureThreshold": 3}


def startup_probe(host: str, path: str, port: int, scheme: str) -> Obj:
    """kubeadm's StartupProbe: after 10s, every 10s, as long as the control plane's
    timeout (4 minutes)."""
    return {**probe(host, path, port, scheme), "initialDelaySeconds": 10,
            "timeoutSeconds": 15, "periodSeconds": 10,
            "failureThreshold": STARTUP_FAILURE_THRESHOLD}


def host_path_volume(name: str, path: Path, container_path: str, kind: str,
                     read_only: bool) -> tuple[Obj, Obj]:
    """A hostPath volume of `path` and its mount at kubeadm's `container_path`."""
    mount: Obj = {"name": name, "mountPath": container_path}
    if read_only:
        mount["readOnly"] = True
    return {"name": name, "hostPath": {"path": str(path), "type": kind}}, mount


def component_pod(container: Obj, volumes: list[tuple[Obj, Obj]],
                  annotations: dict[str, str] | None = None) -> Obj:
    """kubeadm's ComponentPod: the container named after the component, in kube-system,
    on the host's network, system-node-critical, RuntimeDefault seccomp."""
    name = container["name"]
    metadata: Obj = {"name": name, "namespace": NAMESPACE,
                     "labels": {"component": name, "tier": "control-plane"}}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {
        "containers": [{**container, "imagePullPolicy": "IfNotPresent",
                        "volumeMounts": [mount for _, mount in volumes]}],
        "hostNetwork": True,
        "priority": 2000001000,
        "priorityClassName": "system-node-critical",
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "volumes": [volume for volume, _ in volumes],
    }}


def write_static_pod(manifest_dir: Path, pod: Obj) -> Path:
    """Write <manifest_dir>/<name>.yaml: to a hidden file in the same folder, renamed
    over the manifest, so the kubelet never reads half of one (it skips dot-files)."""
    manifest_dir.mkdir(parents=True, exist_ok=True)
    path = manifest_dir / f"{pod['metadata']['name']}.yaml"
    partial = manifest_dir / f".{path.name}.{os.getpid()}.partial"
    try:
        partial.write_text(yaml.safe_dump(pod, sort_keys=False))
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path
