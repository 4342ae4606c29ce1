"""`python -m minikube_py.dashboard --kubeconfig F [--bind-address A] [--port N]
[--traces-url URL] [--tls-cert-file F --tls-private-key-file F] [--client-ca-file F
[--allowed-names CN,...]]`: the dashboard (the page, and the cluster's changes for it),
over HTTPS (tls.py)."""

from __future__ import annotations

import argparse
import sys

from minikube_py.client.component import run_component
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.client.rest import Client
from minikube_py.dashboard.server import Dashboard
from minikube_py.dashboard.tls import serving_context


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.dashboard",
                                     description="minikube-py dashboard")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9090,
                        help="the page and its API (HTTPS; 0 picks a free port)")
    parser.add_argument("--tls-cert-file", default="",
                        help="the serving certificate (PEM); without it, a self-signed one "
                             "made at start")
    parser.add_argument("--tls-private-key-file", default="", help="its private key (PEM)")
    parser.add_argument("--client-ca-file", default="",
                        help="only clients with a certificate this CA signed are let in "
                             "(the API server's proxy: the front-proxy CA); without it, "
                             "anyone who reaches the port")
    parser.add_argument("--allowed-names", default="",
                        help="and only those whose certificate's CN is one of these "
                             "(comma-separated; any, when empty)")
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
    try:
        tls = serving_context(args.bind_address, args.tls_cert_file,
                              args.tls_private_key_file, args.client_ca_file)
    except OSError as error:  # ssl.SSLError too
        sys.exit(f"dashboard: cannot load its TLS files: {error}")
    allowed = tuple(name for name in args.allowed_names.split(",") if name)

    async def run() -> None:
        async with client:
            try:
                await Dashboard(client, args.bind_address, args.port, args.traces_url,
                                tls, allowed).run()
            except OSError as error:
                sys.exit(f"dashboard: cannot listen on {args.bind_address}:{args.port}: "
                         f"{error}")

    run_component("dashboard", run)


if __name__ == "__main__":
    main()
