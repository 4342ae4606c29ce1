"""`describe pod` (describe.go: describePod); its containers are written by
containers.py and its volumes by volumes.py, which pod templates use too.

    Name, Namespace, Priority, Service Account, Node, Start Time, Labels, Annotations,
    Status, IP, IPs, Controlled By
    Init Containers / Containers: image, ports, command, state, ready, restarts,
        limits, requests, probes, environment, mounts
    Conditions, Volumes, QoS Class, Node-Selectors, Tolerations, Events
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    describe_events,
    print_annotations_multiline,
    print_controller,
    print_labels_multiline,
    print_tolerations_multiline,
    search_events,
    since,
)
from minikube_py.mkctl.describers.containers import describe_containers, describe_resources
from minikube_py.mkctl.describers.volumes import describe_volumes
from minikube_py.mkctl.describers.writer import LEVEL_0, LEVEL_1, PrefixWriter, rfc1123z

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
