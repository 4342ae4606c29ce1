"""Which pod and which container a pod command (logs, exec, attach, port-forward) works on
(kubectl's polymorphichelpers AttachablePodForObject and podcmd).

    web                 the pod "web"
    pod/web             the same
    deploy/web          a pod the Deployment's selector matches (svc/web: the Service's)
                        the running and ready ones first, then the oldest

A container is the one -c names, else the pod's `kubectl.kubernetes.io/default-container`
annotation, else its first container.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.mkctl.command import Invocation
from minikube_py.mkctl.errors import MkctlError

DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def resolve(inv: Invocation, arg: str, namespace: str) -> tuple[str, Obj]:
    """The argument's `kind/name` and its object (a pod, or the object that selects pods)."""
    from minikube_py.mkctl import builder

    kind, name = ("pods", arg) if "/" not in arg else arg.split("/", 1)
    selection = builder.select(inv, [kind, name] if "/" not in arg else [arg],
                               namespace=namespace, all_namespaces=False,
                               label_selector="", field_selector="")
    request = selection.requests[0]
    obj = inv.client.get_json(request.resource.path(request.namespace, request.name))
    return request.resource.kind, obj


def pod_for(inv: Invocation, arg: str, namespace: str) -> tuple[Obj, int]:
    """AttachablePodForObject: the pod the argument names or selects, and how many pods the
    selector matched (0 for a pod named directly)."""
    kind, obj = resolve(inv, arg, namespace)
    if kind == "Pod":
        return obj, 0
    return pod_selected(inv, kind, obj, namespace)


def pod_selected(inv: Invocation, kind: str, obj: Obj, namespace: str, *,
                 verb: str = "attach to") -> tuple[Obj, int]:
    """GetFirstPod: the best of the pods the object's selector matches, waiting up to
    --pod-running-timeout for one to exist, and how many it matches."""
    pods = pods_selected(inv, kind, obj, namespace, verb=verb)
    return pods[0], len(pods)


def pods_selected(inv: Invocation, kind: str, obj: Obj, namespace: str, *,
                  verb: str = "attach to") -> list[Obj]:
    """GetPodList: the pods the object's selector matches, best first, waiting up to
    --pod-running-timeout for one to exist."""
    import time

    from minikube_py.api.duration import parse_duration

    selector = _selector(kind, obj)
    if not selector:
        go_type = _go_type(kind, obj)
        raise MkctlError(f"cannot {verb} {go_type}: selector for {go_type} not implemented")
    deadline = time.monotonic() + (parse_duration(inv.flags["pod-running-timeout"]) or 0)
    while True:
        listed = inv.client.get_json(f"/api/v1/namespaces/{namespace}/pods",
                                     {"labelSelector": selector})
        pods = listed.get("items") or []
        if pods:
            return sorted(pods, key=_preference)
        if time.monotonic() >= deadline:
            raise MkctlError("timed out waiting for the condition")
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def _go_type(kind: str, obj: Obj) -> str:
    """How kubectl's %T names the object: `*v1.ConfigMap` for a kind of its own scheme
    (groups without a dot or under k8s.io), `*unstructured.Unstructured` for others."""
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    if "." in group and not group.endswith(".k8s.io"):
        return "*unstructured.Unstructured"
    return f"*{version}.{kind}"


def _selector(kind: str, obj: Obj) -> str:
    """The label selector as text: a Service's map, or a workload's matchLabels."""
    spec = obj.get("spec") or {}
    labels = spec.get("selector") if kind in ("Service", "ReplicationController") else (
        (spec.get("selector") or {}).get("matchLabels"))
    return ",".join(f"{key}={value}" for key, value in sorted((labels or {}).items()))


def _preference(pod: Obj) -> tuple[Any, ...]:
    """ActivePods, best first: scheduled, running, ready, most restarts, oldest."""
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or [])
    restarts = sum(c.get("restartCount", 0) for c in status.get("containerStatuses") or [])
    return (not (pod.get("spec") or {}).get("nodeName"),
            -_PHASE_RANK.get(status.get("phase", ""), 0), not ready, -restarts,
            (pod.get("metadata") or {}).get("creationTimestamp", ""))


def container_names(pod: Obj) -> str:
    """allContainerNames: `a, b, init (init), debug (ephem)`."""
    spec = pod.get("spec") or {}
    names = [c["name"] for c in spec.get("containers") or []]
    names += [f'{c["name"]} (init)' for c in spec.get("initContainers") or []]
    names += [f'{c["name"]} (ephem)' for c in spec.get("ephemeralContainers") or []]
    return ", ".join(names)


def check_container(pod: Obj, name: str) -> str:
    """The container named `name`, which the pod must have (a container, an init or an
    ephemeral one)."""
    spec = pod.get("spec") or {}
    every = [c["name"] for kind in ("containers", "initContainers", "ephemeralContainers")
             for c in spec.get(kind) or []]
    if name not in every:
        raise MkctlError(f"container {name} is not valid for pod {pod['metadata']['name']} "
                         f"out of: {container_names(pod)}")
    return name


def default_container(inv: Invocation, pod: Obj, quiet: bool, *, logs: bool = False) -> str:
    """The container when none is named: the annotated one, else the first, saying so on
    stderr when the pod has others. An annotation naming no container of the pod is an
    error (podcmd's FindOrDefaultContainerByName), except for logs, which warn and take
    the first (logsforobject.go)."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    name = pod["metadata"]["name"]
    if not containers:
        raise MkctlError(f"pod {pod['metadata'].get('namespace', '')}/{name} does not have "
                         f"any containers")
    annotated = ((pod.get("metadata") or {}).get("annotations") or {}).get(
        DEFAULT_CONTAINER_ANNOTATION, "")
    if annotated and not logs:
        return check_container(pod, annotated)
    every = [c["name"] for kind in ("containers", "initContainers", "ephemeralContainers")
             for c in spec.get(kind) or []]
    if annotated in every:
        return annotated
    if annotated:
        inv.err.write(f'Default container name "{annotated}" not found in pod {name}\n')
    if not quiet and (len(containers) > 1 or spec.get("initContainers")
                      or spec.get("ephemeralContainers")):
        inv.err.write(f'Defaulted container "{containers[0]["name"]}" out of: '
                      f"{container_names(pod)}\n")
    return str(containers[0]["name"])


def write_bytes(stream: Any, data: bytes) -> None:
    """Bytes from the pod to stdout or stderr as they came (decoded only for a text-only
    stream), at once: a follower sees each line when it arrives."""
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "replace"))
        stream.flush()
