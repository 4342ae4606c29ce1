"""`python -m minikube_py.dns --kubeconfig F [--cluster-domain cluster.local]
[--bind-address 0.0.0.0] [--port 53] [--advertise-address IP] [--upstream HOST[:PORT]]`"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from minikube_py.client.component import run_component, serve_health
from minikube_py.client.errors import APIStatusError
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.client.rest import Client
from minikube_py.dns.clusterdns import ClusterDNS
from minikube_py.dns.server import DNSStats


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.dns",
                                     description="minikube-py cluster DNS")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--cluster-domain", default="cluster.local")
    parser.add_argument("--bind-address", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=53, help="UDP and TCP port")
    parser.add_argument("--advertise-address", default="",
                        help="the address pods reach this server on: published as the "
                             "kube-system/kube-dns Service's endpoint (none: not published)")
    parser.add_argument("--service-ip", default="10.96.0.10",
                        help="the kube-dns Service's ClusterIP (the kubelets' --cluster-dns)")
    parser.add_argument("--upstream", action="append", default=[], metavar="HOST[:PORT]",
                        help="resolver for names outside the cluster (repeatable; default: "
                             "the nameservers of --resolv-conf)")
    parser.add_argument("--resolv-conf", default="/etc/resolv.conf")
    parser.add_argument("--metrics-bind-address", default="0.0.0.0:9153",
                        help="/healthz and /metrics; port 0 disables")
    add_verbosity_flag(parser)
    return parser.parse_args(argv)


def upstreams(args: argparse.Namespace) -> list[tuple[str, int]]:
    """--upstream entries, else the resolv.conf nameservers that are not this server."""
    found = []
    for spec in args.upstream:
        host, _, port = spec.rpartition(":") if spec.count(":") == 1 else (spec, "", "53")
        found.append((host or spec, int(port or 53)))
    if found:
        return found
    ours = {args.service_ip, args.advertise_address}
    try:
        lines = Path(args.resolv_conf).read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver" and parts[1] not in ours:
            found.append((parts[1], 53))
    return found


class StatsCollector(Collector):
    """CoreDNS's metric names, read from the server's plain counters on scrape."""

    def __init__(self, stats: DNSStats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[CounterMetricFamily]:
        requests = CounterMetricFamily("coredns_dns_requests", "DNS queries", labels=["proto"])
        for proto, count in self.stats.requests.items():
            requests.add_metric([proto], count)
        yield requests
        responses = CounterMetricFamily("coredns_dns_responses", "DNS responses",
                                        labels=["rcode"])
        for rcode, count in self.stats.responses.items():
            responses.add_metric([rcode], count)
        yield responses
        yield CounterMetricFamily("coredns_cache_hits", "answers from the cache",
                                  value=self.stats.cache_hits)
        yield CounterMetricFamily("coredns_cache_misses", "answers not in the cache",
                                  value=self.stats.cache_misses)
        yield CounterMetricFamily("coredns_forward_requests", "queries forwarded",
                                  value=self.stats.forwarded)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging(args.v)
    try:
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="cluster-dns")
    except KubeconfigError as error:
        sys.exit(f"dns: {error}")
    metrics_host, _, metrics_port = args.metrics_bind_address.rpartition(":")

    async def run() -> None:
        stats = DNSStats()
        registry = CollectorRegistry()
        registry.register(StatsCollector(stats))
        runner = (await serve_health(registry, metrics_host or "0.0.0.0", int(metrics_port))
                  if int(metrics_port) else None)
        try:
            async with client:
                await ClusterDNS(
                    client, zone=args.cluster_domain, bind_address=args.bind_address,
                    port=args.port, upstreams=upstreams(args),
                    advertise_address=args.advertise_address, service_ip=args.service_ip,
                    metrics_port=int(metrics_port) or 9153, stats=stats).run()
        except OSError as error:
            sys.exit(f"dns: cannot listen on {args.bind_address}:{args.port}: {error}")
        except APIStatusError as error:
            sys.exit(f"dns: cannot publish the kube-dns Service's endpoint: {error}")
        finally:
            if runner is not None:
                await runner.cleanup()

    run_component("dns", run)


if __name__ == "__main__":
    main()
