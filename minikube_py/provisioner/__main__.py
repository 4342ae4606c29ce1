"""`python -m minikube_py.provisioner --kubeconfig F --nodes-dir D [--bind-address A]
[--port N] [--tracing-endpoint URL]`: the local-path provisioner
(minikube-py.io/local-path), and its resizer (the external-resizer's part: claims of its
volumes that ask for more)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from minikube_py.client.component import (
    component_client,
    component_parser,
    run_component,
    serving_informers,
)
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.provisioner.localpath import PROVISIONER_NAME, LocalPathProvisioner
from minikube_py.provisioner.resizer import LocalPathResizer
from minikube_py.tracing.setup import add_tracing_flag, close_tracer, tracer_for


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = component_parser("python -m minikube_py.provisioner",
                              "minikube-py local-path provisioner", port=10262,
                              port_help="/healthz and /metrics (plain HTTP)")
    parser.add_argument("--nodes-dir", required=True, type=Path,
                        help="the folder of the nodes' files: a volume on node N is "
                             "NODES_DIR/N/local-path-provisioner/pvc-<uid>_<ns>_<name>")
    add_tracing_flag(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    client = component_client("provisioner", args, user_agent="local-path-provisioner",
                              trace_context=True)

    async def run() -> None:
        async with client:
            informers = SharedInformerFactory(client)
            recorder = EventRecorder(client, PROVISIONER_NAME)
            provisioner = LocalPathProvisioner(
                client, informers, recorder, args.nodes_dir.resolve(),
                tracer=tracer_for("local-path-provisioner", args.tracing_endpoint))
            resizer = LocalPathResizer(client, informers)
            try:
                async with (serving_informers("provisioner", args, informers),
                            asyncio.TaskGroup() as group):
                    group.create_task(provisioner.run())
                    group.create_task(resizer.run())
            finally:
                await recorder.stop()
                await close_tracer(provisioner.tracer)

    run_component("provisioner", run)


if __name__ == "__main__":
    main()
