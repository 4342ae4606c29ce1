"""`python -m minikube_py.gateway --kubeconfig F [--bind-address A] [--port N]`: the
gateway controller (Ingress and Gateway API through one nginx data plane)."""

from __future__ import annotations

import argparse

from minikube_py.client.component import (
    component_client,
    component_parser,
    run_component,
    serving_informers,
)
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.gateway.controller import GatewayController
from minikube_py.tracing.setup import add_tracing_flag, close_tracer, tracer_for


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = component_parser("python -m minikube_py.gateway",
                              "minikube-py gateway controller", port=10263,
                              port_help="/healthz and /metrics (plain HTTP)")
    add_tracing_flag(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    client = component_client("gateway", args, user_agent="gateway-controller",
                              trace_context=True)

    async def run() -> None:
        async with client:
            informers = SharedInformerFactory(client)
            controller = GatewayController(
                client, informers, tracer=tracer_for("gateway-controller",
                                                     args.tracing_endpoint))
            try:
                async with serving_informers("gateway", args, informers):
                    await controller.run()
            finally:
                await close_tracer(controller.tracer)

    run_component("gateway", run)


if __name__ == "__main__":
    main()
