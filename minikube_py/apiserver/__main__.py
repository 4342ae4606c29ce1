"""`python -m minikube_py.apiserver --etcd-servers URL[,URL] --bind-address A --port N`."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Callable

from minikube_py.api.duration import flag_duration
from minikube_py.apiserver.allocators import (
    DEFAULT_NODE_PORT_RANGE,
    DEFAULT_SERVICE_CIDR,
    parse_port_range,
    parse_service_cidr,
)
from minikube_py.apiserver.server import APIServer, APIServerConfig


def checked_by(parse: Callable[[str], object]) -> Callable[[str], str]:
    """An argparse type: the flag's text, once `parse` accepts it."""

    def check(text: str) -> str:
        try:
            parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
        return text

    return check


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m minikube_py.apiserver",
        description="The minikube-py API server: Kubernetes REST API on top of etcd.",
    )
    parser.add_argument("--etcd-servers", required=True,
                        help="comma-separated etcd client URLs, e.g. http://127.0.0.1:2379")
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--max-requests-inflight", type=int, default=400)
    parser.add_argument("--max-mutating-requests-inflight", type=int, default=200)
    parser.add_argument("--etcd-compaction-interval", type=flag_duration, default="5m",
                        help="how often to compact etcd history (0 disables)")
    parser.add_argument("--log-requests", choices=("true", "false"), default="true",
                        help="write one JSON log line per request")
    parser.add_argument("--service-cluster-ip-range", type=checked_by(parse_service_cidr),
                        default=DEFAULT_SERVICE_CIDR,
                        help="the IPv4 range cluster IPs of services are allocated from")
    parser.add_argument("--service-node-port-range", type=checked_by(parse_port_range),
                        default=DEFAULT_NODE_PORT_RANGE,
                        help="the ports NodePort services are allocated from, e.g. 30000-32767")
    parser.add_argument("--v", type=int, default=1, help="log verbosity (0 = warnings only)")
    parser.add_argument("--event-loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="the event loop to serve on; uvloop cuts watch latency "
                             "(benchmarks/RESULTS.md)")
    return parser


async def serve(config: APIServerConfig) -> None:
    """Serve until SIGINT or SIGTERM."""
    server = APIServer(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        logging.getLogger("minikube_py.apiserver").info(
            '{"msg": "serving", "address": "http://%s:%d"}', config.bind_address, server.port)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, format="%(message)s",
                        level=logging.INFO if args.v >= 1 else logging.WARNING)
    config = APIServerConfig(
        etcd_servers=[s.strip() for s in args.etcd_servers.split(",") if s.strip()],
        bind_address=args.bind_address,
        port=args.port,
        max_requests_inflight=args.max_requests_inflight,
        max_mutating_requests_inflight=args.max_mutating_requests_inflight,
        compaction_interval=args.etcd_compaction_interval,
        log_requests=args.log_requests == "true",
        service_cluster_ip_range=args.service_cluster_ip_range,
        service_node_port_range=args.service_node_port_range,
    )
    # The watch caches keep every object as dicts, so a full collection walks them all and
    # stalls the event loop (~140 ms each with 5,000 pods cached). Objects decoded from JSON
    # form no reference cycles, so collect far less often (see benchmarks/RESULTS.md).
    gc.set_threshold(50_000, 20, 100)
    if args.event_loop == "uvloop":
        import uvloop

        uvloop.run(serve(config))
    else:
        asyncio.run(serve(config))


if __name__ == "__main__":
    main()
