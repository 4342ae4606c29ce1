"""The kubelet's metrics endpoints, in Prometheus' text format, named as upstream's:

    /metrics/resource   node, pod and container CPU seconds and working set: what the
                        metrics server scrapes for `kubectl top` (stable names)
    /metrics/cadvisor   the per-container series cAdvisor exposes, the part Prometheus
                        dashboards and resource metrics read, plus the machine's size
    /metrics            the kubelet itself: its node, the pods it was given and runs, the
                        containers by state, and its process (CPU, memory, open files)

All three are computed when scraped: the first two from a /stats/summary document (CRI
container stats), the third from the kubelet's pods and a listing of the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.utils import floatToGoString

from minikube_py.api import Obj


@dataclass
class Family:
    """One metric: its name, type, help text and samples (labels, value)."""

    name: str
    kind: str
    help: str
    samples: list[tuple[dict[str, str], float, int | None]] = field(default_factory=list)

    def add(self, labels: dict[str, str], value: float, at: str | None = None) -> None:
        """A sample; `at` (RFC 3339) is when its value was read, written as the sample's
        timestamp in milliseconds."""
        millis = int(parse_rfc3339(at) * 1000) if at else None
        self.samples.append((labels, value, millis))


def exposition(families: list[Family]) -> str:
    """The text format: HELP and TYPE lines, then one line per sample."""
    lines = []
    for family in families:
        lines += [f"# HELP {family.name} {family.help}", f"# TYPE {family.name} {family.kind}"]
        for labels, value, millis in family.samples:
            text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            number = floatToGoString(value) + (f" {millis}" if millis is not None else "")
            lines.append(f"{family.name}{{{text}}} {number}" if text
                         else f"{family.name} {number}")
    return "\n".join(lines) + "\n"


def reading_time(seconds: float) -> str:
    """When a reading was taken, as the Summary API writes it: RFC 3339 to the
    microsecond (a rate over a 2 s window needs more than whole seconds)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 time ("2026-11-25T03:47:54Z")."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def resource_metrics(summary: Obj | None) -> str:
    """/metrics/resource from a /stats/summary document (None: the scrape failed)."""
    node_cpu = Family("node_cpu_usage_seconds_total", "counter",
                      "[STABLE] Cumulative cpu time consumed by the node in core-seconds")
    node_memory = Family("node_memory_working_set_bytes", "gauge",
                         "[STABLE] Current working set of the node in bytes")
    pod_cpu = Family("pod_cpu_usage_seconds_total", "counter",
                     "[STABLE] Cumulative cpu time consumed by the pod in core-seconds")
    pod_memory = Family("pod_memory_working_set_bytes", "gauge",
                        "[STABLE] Current working set of the pod in bytes")
    container_cpu = Family("container_cpu_usage_seconds_total", "counter",
                           "[STABLE] Cumulative cpu time consumed by the container in "
                           "core-seconds")
    container_memory = Family("container_memory_working_set_bytes", "gauge",
                              "[STABLE] Current working set of the container in bytes")
    container_start = Family("container_start_time_seconds", "gauge",
                             "[STABLE] Start time of the container since unix epoch in seconds")
    error = Family("resource_scrape_error", "gauge",
                   "[STABLE] 1 if there was an error while getting container metrics, "
                   "0 otherwise")
    if summary is not None:
        node = summary.get("node") or {}
        cpu, memory = node.get("cpu") or {}, node.get("memory") or {}
        node_cpu.add({}, cpu.get("usageCoreNanoSeconds", 0) / 1e9, cpu.get("time"))
        node_memory.add({}, memory.get("workingSetBytes", 0), memory.get("time"))
        for pod in summary.get("pods") or []:
            ref = {"namespace": pod["podRef"]["namespace"], "pod": pod["podRef"]["name"]}
            pod_cpu.add(ref, pod["cpu"]["usageCoreNanoSeconds"] / 1e9, pod["cpu"]["time"])
            pod_memory.add(ref, pod["memory"]["workingSetBytes"], pod["memory"]["time"])
            for container in pod.get("containers") or []:
                labels = {"container": container["name"], **ref}
                cpu, memory = container["cpu"], container["memory"]
                container_cpu.add(labels, cpu["usageCoreNanoSeconds"] / 1e9, cpu["time"])
                container_memory.add(labels, memory["workingSetBytes"], memory["time"])
                if container.get("startTime"):
                    container_start.add(labels, parse_rfc3339(container["startTime"]),
                                        cpu["time"])
    text = exposition([node_cpu, node_memory, pod_cpu, pod_memory, container_cpu,
                       container_memory, container_start])
    error.add({}, 0 if summary is not None else 1)
    return text + exposition([error])


def cadvisor_metrics(summary: Obj, cpus: int, memory_bytes: int) -> str:
    """/metrics/cadvisor: each container's CPU seconds, working set and writable layer,
    labelled as cAdvisor labels them (container, namespace, pod), and the machine."""
    cores = Family("machine_cpu_cores", "gauge", "Number of logical CPU cores.")
    memory = Family("machine_memory_bytes", "gauge", "Amount of memory installed on the machine.")
    cpu = Family("container_cpu_usage_seconds_total", "counter",
                 "Cumulative cpu time consumed in seconds.")
    working_set = Family("container_memory_working_set_bytes", "gauge",
                         "Current working set in bytes.")
    filesystem = Family("container_fs_usage_bytes", "gauge",
                        "Number of bytes that are consumed by the container on this filesystem.")
    cores.add({}, cpus)
    memory.add({}, memory_bytes)
    for pod in summary.get("pods") or []:
        ref = {"namespace": pod["podRef"]["namespace"], "pod": pod["podRef"]["name"]}
        for container in pod.get("containers") or []:
            labels = {"container": container["name"], **ref}
            cpu.add(labels, container["cpu"]["usageCoreNanoSeconds"] / 1e9)
            working_set.add(labels, container["memory"]["workingSetBytes"])
            filesystem.add(labels, (container.get("rootfs") or {}).get("usedBytes", 0))
    return exposition([cores, memory, cpu, working_set, filesystem])


@dataclass
class RuntimeCounts:
    """What /metrics reports of the runtime: running pod sandboxes, containers by state."""

    running_pods: int
    containers: dict[str, int]  # created | running | exited | unknown -> how many


class KubeletMetrics:
    """/metrics: the kubelet's own gauges, then its process' (prometheus_client's)."""

    def __init__(self, node_name: str) -> None:
        self.node_name = node_name
        self.process = CollectorRegistry()
        ProcessCollector(registry=self.process)

    def render(self, desired_pods: int, counts: RuntimeCounts) -> str:
        node = Family("kubelet_node_name", "gauge", "[ALPHA] The node's name. The count is "
                      "always 1.")
        node.add({"node": self.node_name}, 1)
        desired = Family("kubelet_desired_pods", "gauge", "[ALPHA] The number of pods the "
                         "kubelet is being instructed to run.")
        desired.add({"static": ""}, desired_pods)
        pods = Family("kubelet_running_pods", "gauge", "[ALPHA] Number of pods that have a "
                      "running pod sandbox")
        pods.add({}, counts.running_pods)
        containers = Family("kubelet_running_containers", "gauge",
                            "[ALPHA] Number of containers currently running")
        for state in ("created", "exited", "running", "unknown"):
            containers.add({"container_state": state}, counts.containers.get(state, 0))
        return (exposition([node, desired, pods, containers])
                + generate_latest(self.process).decode())
