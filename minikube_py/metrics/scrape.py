"""What the metrics server computes from the kubelets' /metrics/resource (pure: no I/O).

Each scrape gives cumulative CPU seconds and the current working set; the CPU use of
`kubectl top` is the rate between the last two scrapes (metrics-server's), the memory the
last working set. A container that started less than one resolution ago (but at least
10 s ago) needs no second scrape: its start, with no CPU used yet, serves as the earlier
reading (metrics-server's fresh-container rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SAMPLE = re.compile(r'^(\w+)(?:\{([^}]*)\})?\s+(\S+)(?:\s+(\d+))?$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass
class Point:
    """One reading: cumulative CPU seconds, working-set bytes, when (seconds)."""

    cpu_seconds: float = 0.0
    memory_bytes: float = 0.0
    at: float = 0.0
    start: float = 0.0  # when the container started (containers only; 0: unknown)


@dataclass
class NodeScrape:
    """One node's readings: the node's, each pod's and each container's."""

    node: Point = field(default_factory=Point)
    pods: dict[tuple[str, str], Point] = field(default_factory=dict)
    containers: dict[tuple[str, str, str], Point] = field(default_factory=dict)


def parse_resource_metrics(text: str, now: float) -> NodeScrape:
    """The kubelet's /metrics/resource text as readings: a point's time is its CPU
    sample's timestamp (in ms; `now` for a sample without one), as metrics-server's."""
    scrape = NodeScrape()
    for line in text.splitlines():
        match = SAMPLE.match(line.strip())
        if not match or line.startswith("#"):
            continue
        name, labels_text, value, stamp = match.groups()
        labels = dict(LABEL.findall(labels_text or ""))
        at = int(stamp) / 1000 if stamp else now
        if name.startswith("node_"):
            point = scrape.node
        elif name.startswith("pod_"):
            point = scrape.pods.setdefault((labels["namespace"], labels["pod"]), Point())
        elif name.startswith("container_"):
            point = scrape.containers.setdefault(
                (labels["namespace"], labels["pod"], labels["container"]), Point())
        else:
            continue
        if name.endswith("_cpu_usage_seconds_total"):
            # the CPU reading's time is the point's: the rate divides by it
            point.cpu_seconds, point.at = float(value), at
        elif name.endswith("_memory_working_set_bytes"):
            point.memory_bytes = float(value)
        elif name == "container_start_time_seconds":
            point.start = float(value)
    return scrape


FRESH_MINIMUM = 10.0
"""Seconds a container must have run before its start counts as a reading (fewer give
inaccurate rates: upstream's freshContainerMinMetricsResolution)."""


def usage(previous: Point | None, latest: Point, resolution: float = 0.0
          ) -> tuple[int, int] | None:
    """(CPU in nanocores, memory in bytes) between two readings; None without a rate
    (the first reading of a container that is not fresh, or one that restarted since)."""
    if latest.start and FRESH_MINIMUM <= latest.at - latest.start < resolution:
        previous = Point(0.0, 0.0, latest.start)
    elif previous is None or latest.cpu_seconds < previous.cpu_seconds or (
            latest.start > previous.at):
        return None
    if latest.at <= previous.at:
        return None
    rate = (latest.cpu_seconds - previous.cpu_seconds) / (latest.at - previous.at)
    return int(rate * 1e9), int(latest.memory_bytes)


def cpu_quantity(nanocores: int) -> str:
    return f"{nanocores}n"


def memory_quantity(memory_bytes: int) -> str:
    return f"{memory_bytes // 1024}Ki"
