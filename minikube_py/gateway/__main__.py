"""`python -m minikube_py.gateway --kubeconfig F [--bind-address A] [--port N]`: the
gateway controller (Ingress and Gateway API through one nginx data plane)."""

from __future__ import annotations

import argparse
import sys

from prometheus_client import CollectorRegistry

from minikube_py.client.component import run_component, serve_health
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.client.rest import Client
from minikube_py.gateway.controller import GatewayController


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.gateway",
                                     description="minikube-py gateway controller")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=10263,
                        help="/healthz and /metrics (plain HTTP)")
    add_verbosity_flag(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging(args.v)
    try:
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="gateway-controller")
    except KubeconfigError as error:
        sys.exit(f"gateway: {error}")

    async def run() -> None:
        async with client:
            informers = SharedInformerFactory(client)
            controller = GatewayController(client, informers)
            try:
                health = await serve_health(CollectorRegistry(), args.bind_address, args.port)
            except OSError as error:
                sys.exit(f"gateway: cannot listen on {args.bind_address}:{args.port}: {error}")
            try:
                informers.start()
                await informers.wait_for_cache_sync()
                await controller.run()
            finally:
                await informers.stop()
                await health.cleanup()

    run_component("gateway", run)


if __name__ == "__main__":
    main()
