"""`python -m minikube_py.provisioner --kubeconfig F --nodes-dir D [--bind-address A]
[--port N]`: the local-path provisioner (minikube-py.io/local-path), and its resizer
(the external-resizer's part: claims of its volumes that ask for more)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from prometheus_client import CollectorRegistry

from minikube_py.client.component import run_component, serve_health
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.client.rest import Client
from minikube_py.provisioner.localpath import PROVISIONER_NAME, LocalPathProvisioner
from minikube_py.provisioner.resizer import LocalPathResizer


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.provisioner",
                                     description="minikube-py local-path provisioner")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--nodes-dir", required=True, type=Path,
                        help="the folder of the nodes' files: a volume on node N is "
                             "NODES_DIR/N/local-path-provisioner/pvc-<uid>_<ns>_<name>")
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=10262,
                        help="/healthz and /metrics (plain HTTP)")
    add_verbosity_flag(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging(args.v)
    try:
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="local-path-provisioner")
    except KubeconfigError as error:
        sys.exit(f"provisioner: {error}")

    async def run() -> None:
        async with client:
            informers = SharedInformerFactory(client)
            recorder = EventRecorder(client, PROVISIONER_NAME)
            provisioner = LocalPathProvisioner(client, informers, recorder,
                                               args.nodes_dir.resolve())
            resizer = LocalPathResizer(client, informers)
            try:
                health = await serve_health(CollectorRegistry(), args.bind_address, args.port)
            except OSError as error:
                sys.exit(f"provisioner: cannot listen on {args.bind_address}:{args.port}: "
                         f"{error}")
            try:
                informers.start()
                await informers.wait_for_cache_sync()
                async with asyncio.TaskGroup() as group:
                    group.create_task(provisioner.run())
                    group.create_task(resizer.run())
            finally:
                await informers.stop()
                await recorder.stop()
                await health.cleanup()

    run_component("provisioner", run)


if __name__ == "__main__":
    main()
