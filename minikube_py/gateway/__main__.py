"""`python -m minikube_py.gateway --kubeconfig F [--bind-address A] [--port N]
[--data-plane-ports FIRST-LAST]`: the gateway controller (Ingress and Gateway API
through one nginx data plane)."""

from __future__ import annotations

import argparse

from minikube_py.client.component import (
    component_client,
    component_parser,
    run_component,
    serving_informers,
)
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.gateway.controller import DATA_PLANE_PORTS, GatewayController
from minikube_py.tracing.setup import add_tracing_flag, close_tracer, tracer_for


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = component_parser("python -m minikube_py.gateway",
                              "minikube-py gateway controller", port=10263,
                              port_help="/healthz and /metrics (plain HTTP)")
    parser.add_argument("--data-plane-ports", type=port_range,
                        default=DATA_PLANE_PORTS, metavar="FIRST-LAST",
                        help="nginx's ports for the Gateways' listeners (default "
                        f"{DATA_PLANE_PORTS.start}-{DATA_PLANE_PORTS.stop - 1})")
    add_tracing_flag(parser)
    return parser.parse_args(argv)


def port_range(text: str) -> range:
    first, _, last = text.partition("-")
    try:
        return range(int(first), int(last or first) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not FIRST-LAST") from None


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    client = component_client("gateway", args, user_agent="gateway-controller",
                              trace_context=True)

    async def run() -> None:
        async with client:
            informers = SharedInformerFactory(client)
            controller = GatewayController(
                client, informers, tracer=tracer_for("gateway-controller",
                                                     args.tracing_endpoint),
                data_plane_ports=args.data_plane_ports)
            try:
                async with serving_informers("gateway", args, informers):
                    await controller.run()
            finally:
                await close_tracer(controller.tracer)

    run_component("gateway", run)


if __name__ == "__main__":
    main()
