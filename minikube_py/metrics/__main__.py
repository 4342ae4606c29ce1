"""`python -m minikube_py.metrics --kubeconfig F [--bind-address A] [--port N]
[--metric-resolution 5s] [--advertise-address IP]`: metrics-server's role."""

from __future__ import annotations

import argparse
import sys

from minikube_py.api.duration import flag_duration
from minikube_py.client.component import component_client, component_parser, run_component
from minikube_py.client.errors import APIStatusError
from minikube_py.metrics.server import MetricsServer


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = component_parser("python -m minikube_py.metrics",
                              "minikube-py resource metrics (kubectl top)", port=4443)
    parser.add_argument("--metric-resolution", type=flag_duration, default=5.0,
                        help="how often every kubelet is scraped (5s: the kubelet reads the "
                             "cgroups when asked, so every scrape is fresh)")
    parser.add_argument("--advertise-address", default="",
                        help="the address the API server reaches this server on: published "
                             "as the kube-system/metrics-server Service's endpoint, with the "
                             "APIService v1beta1.metrics.k8s.io (none: not published)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    client = component_client("metrics", args, user_agent="metrics-server")

    async def serve() -> None:
        try:
            async with client:
                await MetricsServer(client, args.bind_address, args.port,
                                    resolution=args.metric_resolution,
                                    advertise_address=args.advertise_address).run()
        except OSError as error:
            sys.exit(f"metrics: cannot listen on {args.bind_address}:{args.port}: {error}")
        except APIStatusError as error:
            sys.exit(f"metrics: cannot publish the metrics-server Service: {error}")

    run_component("metrics", serve)


if __name__ == "__main__":
    main()
