"""`python -m minikube_py.dashboard --kubeconfig F [--bind-address A] [--port N]
[--traces-url URL]`: the dashboard (the page, and the cluster's changes for it)."""

from __future__ import annotations

import argparse
import sys

from minikube_py.client.component import run_component
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.client.rest import Client
from minikube_py.dashboard.server import Dashboard


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.dashboard",
                                     description="minikube-py dashboard")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9090,
                        help="the page and its API (plain HTTP; 0 picks a free port)")
    parser.add_argument("--traces-url", default="",
                        help="the trace receiver (default: the url in "
                             "kube-public/minikube-py-tracing)")
    add_verbosity_flag(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging(args.v)
    try:
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="dashboard")
    except KubeconfigError as error:
        sys.exit(f"dashboard: {error}")

    async def run() -> None:
        async with client:
            try:
                await Dashboard(client, args.bind_address, args.port, args.traces_url).run()
            except OSError as error:
                sys.exit(f"dashboard: cannot listen on {args.bind_address}:{args.port}: "
                         f"{error}")

    run_component("dashboard", run)


if __name__ == "__main__":
    main()
