"""`mkctl top node|pod`: the CPU and memory nodes and pods use now, from the resource
metrics API metrics.k8s.io (kubectl top).

    mkctl top node                  NAME  CPU(cores)  CPU(%)  MEMORY(bytes)  MEMORY(%)
    mkctl top pod -n web            NAME  CPU(cores)  MEMORY(bytes)
    mkctl top pod -A --containers   NAMESPACE  POD  NAME  CPU(cores)  MEMORY(bytes)

Where the numbers come from: the metrics server (minikube_py/metrics) scrapes every
kubelet and serves NodeMetrics and PodMetrics; the API server proxies
/apis/metrics.k8s.io/v1beta1/... to it once its APIService is available. Without that
group in discovery, kubectl says "Metrics API not available".

How kubectl prints them: CPU as whole millicores rounded up (Quantity.MilliValue),
memory as whole MiB rounded down; a node's percentages are of its allocatable (or, with
--show-capacity, its capacity), cut to whole numbers; a pod's usage is the sum of its
containers'. Rows are sorted by name (namespace first with -A), or with --sort-by by
cpu or memory, largest first.
"""

from __future__ import annotations

import io
from decimal import ROUND_CEILING, Decimal
from typing import Any

from minikube_py.api import Obj
from minikube_py.mkctl.command import Command, Invocation, run_group
from minikube_py.mkctl.errors import MkctlError, UsageError
from minikube_py.mkctl.flags import ALL_NAMESPACES_FLAG, BOOL, SELECTOR_FLAG, Flag

PREFIX = "/apis/metrics.k8s.io/v1beta1"
MIB = 1024 * 1024


def _quantity(text: str) -> Decimal:
    from minikube_py.api.quantity import parse_quantity

    return parse_quantity(text or "0")


def milli(value: Decimal) -> int:
    """Quantity.MilliValue: thousandths, rounded up."""
    return int((value * 1000).to_integral_value(rounding=ROUND_CEILING))


def mebibytes(value: Decimal) -> int:
    """Quantity.Value (bytes, rounded up) in whole MiB."""
    return int(value.to_integral_value(rounding=ROUND_CEILING)) // MIB


class Usage:
    """CPU (cores) and memory (bytes) of a node, pod or container."""

    def __init__(self, cpu: Decimal, memory: Decimal) -> None:
        self.cpu, self.memory = cpu, memory

    @classmethod
    def of(cls, usage: Obj) -> Usage:
        return cls(_quantity(usage.get("cpu", "0")), _quantity(usage.get("memory", "0")))

    def cells(self) -> list[str]:
        return [f"{milli(self.cpu)}m", f"{mebibytes(self.memory)}Mi"]


def _sort_key(sort_by: str, name_key: tuple[str, ...], usage: Usage) -> tuple[Any, ...]:
    """kubectl's metrics sorters: by name, or by cpu or memory, largest first."""
    if sort_by == "cpu":
        return (-milli(usage.cpu),)
    if sort_by == "memory":
        return (-usage.memory,)
    return name_key


def _check_sort_by(inv: Invocation) -> str:
    sort_by = inv.flags["sort-by"]
    if sort_by not in ("", "cpu", "memory"):
        raise MkctlError("--sort-by accepts only cpu or memory")
    return sort_by


def _require_metrics_api(inv: Invocation) -> None:
    """The group must be in discovery (kubectl: SupportedMetricsAPIVersionAvailable)."""
    groups = inv.client.get_json("/apis").get("groups") or []
    if not any(group.get("name") == "metrics.k8s.io" for group in groups):
        raise MkctlError("Metrics API not available")


def _print(inv: Invocation, header: list[str], rows: list[list[str]]) -> None:
    """Through a tabwriter, each cell ended by a tab as kubectl's top printer does."""
    from minikube_py.mkctl.printers.tabwriter import TabWriter

    table = io.StringIO()
    writer = TabWriter(table, min_width=0, padding=3)
    for row in ([] if inv.flags["no-headers"] else [header]) + rows:
        writer.write_row([*row, ""])
    writer.flush()
    inv.out.write(table.getvalue())


def _selector_and_name(inv: Invocation, what: str) -> tuple[str, str]:
    if len(inv.args) > 1:
        raise UsageError(f"{what} [NAME | -l label]", inv.path)
    name = inv.args[0] if inv.args else ""
    selector = inv.flags["selector"]
    if name and selector:
        raise MkctlError("only one of NAME or selector can be provided")
    return name, selector


# -- nodes --

def run_nodes(inv: Invocation) -> None:
    sort_by = _check_sort_by(inv)
    name, selector = _selector_and_name(inv, "node")
    _require_metrics_api(inv)
    params = {"labelSelector": selector} if selector else {}
    if name:
        metrics = [inv.client.get_json(f"{PREFIX}/nodes/{name}")]
        nodes = [inv.client.get_json(f"/api/v1/nodes/{name}")]
    else:
        metrics = inv.client.get_json(f"{PREFIX}/nodes", params).get("items") or []
        nodes = inv.client.get_json("/api/v1/nodes", params).get("items") or []
    if not metrics:
        raise MkctlError("metrics not available yet")
    field = "capacity" if inv.flags["show-capacity"] else "allocatable"
    available = {node["metadata"]["name"]: (node.get("status") or {}).get(field) or {}
                 for node in nodes}
    measured = [(item["metadata"]["name"], Usage.of(item.get("usage") or {}))
                for item in metrics]
    measured.sort(key=lambda entry: _sort_key(sort_by, (entry[0],), entry[1]))
    rows = []
    for node, usage in measured:
        if node not in available:
            continue
        cpu_total = milli(_quantity(available[node].get("cpu", "0")))
        memory_total = _quantity(available[node].get("memory", "0"))
        cpu_percent = int(milli(usage.cpu) / cpu_total * 100) if cpu_total else 0
        memory_percent = int(float(usage.memory) / float(memory_total) * 100) if (
            memory_total) else 0
        cpu, memory = usage.cells()
        rows.append([node, cpu, f"{cpu_percent}%", memory, f"{memory_percent}%"])
    for node in sorted(set(available) - {node for node, _ in measured}):
        rows.append([node, "<unknown>", "<unknown>", "<unknown>", "<unknown>"])
    _print(inv, ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"], rows)


# -- pods --

def run_pods(inv: Invocation) -> None:
    flags = inv.flags
    sort_by = _check_sort_by(inv)
    name, selector = _selector_and_name(inv, "pod")
    namespace, _ = inv.namespace()
    all_namespaces = flags["all-namespaces"]
    _require_metrics_api(inv)
    params = {"labelSelector": selector} if selector else {}
    if flags["field-selector"]:
        params["fieldSelector"] = flags["field-selector"]
    if name:
        metrics = [inv.client.get_json(f"{PREFIX}/namespaces/{namespace}/pods/{name}")]
    else:
        path = f"{PREFIX}/pods" if all_namespaces else f"{PREFIX}/namespaces/{namespace}/pods"
        metrics = inv.client.get_json(path, params).get("items") or []
    if not metrics:
        inv.err.write("No resources found\n" if all_namespaces else
                      f"No resources found in {namespace} namespace.\n")
        return
    pods = []
    for item in metrics:
        containers = [(c.get("name", ""), Usage.of(c.get("usage") or {}))
                      for c in item.get("containers") or []]
        total = Usage(sum((usage.cpu for _, usage in containers), Decimal(0)),
                      sum((usage.memory for _, usage in containers), Decimal(0)))
        meta = item["metadata"]
        pods.append((meta.get("namespace", ""), meta["name"], total, containers))
    pods.sort(key=lambda pod: _sort_key(sort_by, (pod[0], pod[1]) if all_namespaces
                                        else (pod[1],), pod[2]))
    header = ["NAMESPACE"] if all_namespaces else []
    header += ["POD", "NAME"] if flags["containers"] else ["NAME"]
    header += ["CPU(cores)", "MEMORY(bytes)"]
    rows = []
    for pod_namespace, pod, total, containers in pods:
        lead = [pod_namespace] if all_namespaces else []
        if flags["containers"]:
            containers.sort(key=lambda entry: _sort_key(sort_by, (entry[0],), entry[1]))
            rows += [[*lead, pod, container, *usage.cells()]
                     for container, usage in containers]
        else:
            rows.append([*lead, pod, *total.cells()])
    if flags["sum"]:
        blank = [""] * (len(header) - 2)
        cpu = sum((total.cpu for _, _, total, _ in pods), Decimal(0))
        memory = sum((total.memory for _, _, total, _ in pods), Decimal(0))
        rows.append([*blank, "________", "________"])
        rows.append([*blank, *Usage(cpu, memory).cells()])
    _print(inv, header, rows)


NO_HEADERS = Flag("no-headers", BOOL, help="If present, print output without headers")
USE_PROTOCOL_BUFFERS = Flag("use-protocol-buffers", BOOL, default=True,
                            help="Enables using protocol-buffers to access Metrics API.")

COMMAND = Command(
    name="top",
    summary="Display resource (CPU/memory) usage",
    description="Display resource (CPU/memory) usage.\n\n This command provides a view of "
                "recent resource consumption for nodes and pods. It fetches metrics from "
                "the Metrics Server, which aggregates this data from the kubelet on each "
                "node.",
    usage="top [flags] [options]",
    run=lambda inv: run_group(inv, COMMAND, help_to_stderr=True),
    subcommands=[
        Command(name="node", aliases=("nodes", "no"),
                summary="Display resource (CPU/memory) usage of nodes", run=run_nodes,
                usage="top node [NAME | -l label] [options]",
                flags=[NO_HEADERS, SELECTOR_FLAG, USE_PROTOCOL_BUFFERS,
                       Flag("show-capacity", BOOL,
                            help="Print node resources based on Capacity instead of "
                                 "Allocatable(default) of the nodes."),
                       Flag("sort-by", help="If non-empty, sort nodes list using specified "
                                            "field. The field can be either 'cpu' or "
                                            "'memory'.")]),
        Command(name="pod", aliases=("pods", "po"),
                summary="Display resource (CPU/memory) usage of pods", run=run_pods,
                usage="top pod [NAME | -l label] [options]",
                flags=[NO_HEADERS, SELECTOR_FLAG, USE_PROTOCOL_BUFFERS,
                       ALL_NAMESPACES_FLAG,
                       Flag("containers", BOOL, help="If present, print usage of containers "
                                                     "within a pod."),
                       Flag("field-selector", help="Selector (field query) to filter on."),
                       Flag("sort-by", help="If non-empty, sort pods list using specified "
                                            "field. The field can be either 'cpu' or "
                                            "'memory'."),
                       Flag("sum", BOOL, help="Print the sum of the resource usage")]),
    ],
)
