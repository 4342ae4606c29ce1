"""The metrics server's arithmetic: kubelet resource metrics in, kubectl top's numbers out."""

from __future__ import annotations

from typing import Any

from minikube_py.kubelet.metrics import resource_metrics
from minikube_py.metrics.scrape import (
    Point,
    cpu_quantity,
    memory_quantity,
    parse_resource_metrics,
    usage,
)

SCRAPE = """\
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 12.5 1700000010000
node_memory_working_set_bytes 2.097152e+06 1700000010000
pod_cpu_usage_seconds_total{namespace="default",pod="w"} 2.5 1700000010000
pod_memory_working_set_bytes{namespace="default",pod="w"} 1048576 1700000010000
container_cpu_usage_seconds_total{container="c",namespace="default",pod="w"} 2.5 1700000010000
container_memory_working_set_bytes{container="c",namespace="default",pod="w"} 1048576 1700000010000
resource_scrape_error 0
"""


def test_a_scrape_reads_node_pod_and_container_points() -> None:
    scrape = parse_resource_metrics(SCRAPE, now=0)
    assert scrape.node == Point(12.5, 2097152, 1700000010.0)
    assert scrape.pods[("default", "w")] == Point(2.5, 1048576, 1700000010.0)
    assert scrape.containers[("default", "w", "c")] == Point(2.5, 1048576, 1700000010.0)


def test_usage_is_the_cpu_rate_between_two_readings_and_the_last_memory() -> None:
    assert usage(None, Point(1.0, 100, 10)) is None  # one reading: no rate yet
    assert usage(Point(1.0, 100, 10), Point(2.5, 300, 12)) == (750_000_000, 300)
    assert usage(Point(5.0, 100, 10), Point(1.0, 100, 12)) is None  # a restart
    assert (cpu_quantity(750_000_000), memory_quantity(300 * 1024)) == ("750000000n", "300Ki")


def test_a_fresh_container_counts_from_its_start_with_one_reading() -> None:
    # started 12 s before the reading, resolution 15 s: its start is the earlier reading
    fresh = Point(cpu_seconds=3.0, memory_bytes=100, at=112, start=100)
    assert usage(None, fresh, resolution=15) == (250_000_000, 100)
    # under 10 s old: too few to be accurate; older than a resolution: two scrapes needed
    assert usage(None, Point(1.0, 100, at=105, start=100), resolution=15) is None
    assert usage(None, Point(1.0, 100, at=130, start=100), resolution=15) is None
    # a reading from before a restart is no earlier reading of the new container
    assert usage(Point(9.0, 100, at=90), Point(9.5, 100, at=130, start=100),
                 resolution=15) is None


def test_the_start_time_of_a_container_is_read() -> None:
    text = SCRAPE + ('container_start_time_seconds{container="c",namespace="default",'
                     'pod="w"} 1.7e+09 1700000010000\n')
    point = parse_resource_metrics(text, now=0).containers[("default", "w", "c")]
    assert (point.start, point.at) == (1.7e9, 1700000010.0)


def test_a_points_time_is_its_cpu_samples_whatever_the_other_samples_say() -> None:
    text = SCRAPE.replace(
        'container_cpu_usage_seconds_total{container="c",namespace="default",pod="w"} 2.5 '
        '1700000010000', 'container_cpu_usage_seconds_total{container="c",namespace="default",'
        'pod="w"} 2.5 1700000009250') + (
        'container_start_time_seconds{container="c",namespace="default",pod="w"} 1.7e+09\n')
    point = parse_resource_metrics(text, now=0).containers[("default", "w", "c")]
    assert (point.cpu_seconds, point.at, point.start) == (2.5, 1700000009.25, 1.7e9)


def test_the_kubelet_stamps_each_sample_with_the_time_its_value_was_read() -> None:
    def reading(value: float, at: str, key: str) -> dict[str, Any]:
        return {"time": at, key: value}
    summary = {
        "node": {"cpu": reading(3e9, "2023-11-14T22:13:30.500000Z", "usageCoreNanoSeconds"),
                 "memory": reading(4096, "2023-11-14T22:13:30.400000Z", "workingSetBytes")},
        "pods": [{"podRef": {"namespace": "default", "name": "w"},
                  "cpu": reading(2e9, "2023-11-14T22:13:30.500000Z", "usageCoreNanoSeconds"),
                  "memory": reading(1024, "2023-11-14T22:13:30.400000Z", "workingSetBytes"),
                  "containers": [{
                      "name": "c", "startTime": "2023-11-14T22:13:00Z",
                      "cpu": reading(2e9, "2023-11-14T22:13:30.250000Z",
                                     "usageCoreNanoSeconds"),
                      "memory": reading(1024, "2023-11-14T22:13:30.125000Z",
                                        "workingSetBytes")}]}]}
    lines = [line for line in resource_metrics(summary).splitlines()
             if not line.startswith("#")]
    assert lines == [
        "node_cpu_usage_seconds_total 3.0 1700000010500",
        "node_memory_working_set_bytes 4096.0 1700000010400",
        'pod_cpu_usage_seconds_total{namespace="default",pod="w"} 2.0 1700000010500',
        'pod_memory_working_set_bytes{namespace="default",pod="w"} 1024.0 1700000010400',
        'container_cpu_usage_seconds_total{container="c",namespace="default",pod="w"} 2.0 '
        '1700000010250',
        'container_memory_working_set_bytes{container="c",namespace="default",pod="w"} 1024.0 '
        '1700000010125',
        'container_start_time_seconds{container="c",namespace="default",pod="w"} 1.69999998e+09 '
        '1700000010250',
        "resource_scrape_error 0.0"]
    scrape = parse_resource_metrics(resource_metrics(summary), now=0)
    assert scrape.containers[("default", "w", "c")].at == 1700000010.25
