"""`python -m minikube_py.proxy --kubeconfig F --hostname-override NODE [--proxy-mode
iptables|nftables] [--cluster-cidr CIDR] [--healthz-bind-address A:10256]
[--metrics-bind-address A:10249] [--iptables-sync-period 30s] [--network-policy=false]
[--cleanup]`

Beside the Service rules, the proxy enforces NetworkPolicies on its node (netpol/), unless
--network-policy=false."""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys

from prometheus_client import CollectorRegistry, generate_latest

from minikube_py.api.duration import flag_duration
from minikube_py.client.component import run_component
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.client.rest import Client
from minikube_py.proxy.commands import RestoreError
from minikube_py.proxy.healthcheck import serve_healthz
from minikube_py.proxy.netpol.controller import NetworkPolicyController, PolicyTables
from minikube_py.proxy.proxier import MODES, Proxier
from minikube_py.proxy.rules import ProxyConfig
from minikube_py.tracing.setup import add_tracing_flag, close_tracer, tracer_for


def address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not port.isdigit():
        raise argparse.ArgumentTypeError(f"invalid address {text!r} (want HOST:PORT)")
    return host or "0.0.0.0", int(port)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.proxy",
                                     description="minikube-py service proxy")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--hostname-override", default=socket.gethostname(),
                        help="this node's name (its local endpoints and its Node object)")
    parser.add_argument("--proxy-mode", default="iptables", choices=sorted(MODES),
                        help="iptables (the default) or nftables (the table ip kube-proxy); "
                             "no IPVS")
    parser.add_argument("--cluster-cidr", default="",
                        help="the pods' range: traffic from outside it to a ClusterIP is "
                             "masqueraded")
    parser.add_argument("--healthz-bind-address", type=address, default=("0.0.0.0", 10256))
    parser.add_argument("--metrics-bind-address", type=address, default=("127.0.0.1", 10249))
    parser.add_argument("--iptables-sync-period", type=flag_duration, default=30.0)
    parser.add_argument("--iptables-min-sync-period", type=flag_duration, default=0.1)
    parser.add_argument("--netns", default=None,
                        help="program the tables of this network namespace (a path such as "
                             "/var/run/netns/NAME) instead of our own")
    parser.add_argument("--network-policy", nargs="?", const="true",
                        choices=("true", "false"), default="true",
                        help="enforce NetworkPolicies on this node (the table inet "
                             "kube-network-policies); false leaves them unenforced")
    parser.add_argument("--cleanup", action="store_true",
                        help="remove every rule and chain the proxy created (in either mode, "
                             "and the NetworkPolicy table), then exit")
    add_tracing_flag(parser)
    add_verbosity_flag(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging(args.v)
    if args.cleanup:
        for name, writer in MODES.items():
            try:
                print(asyncio.run(writer(ProxyConfig(""), args.netns).cleanup()))
            except FileNotFoundError as error:
                print(f"{name} mode: nothing to remove ({error.filename} is not installed)")
            except (RestoreError, OSError) as error:
                sys.exit(f"proxy: cleanup of the {name} mode's rules failed: {error}")
        try:
            gone = asyncio.run(PolicyTables(args.netns).cleanup())
        except FileNotFoundError:
            gone = False
        except (RestoreError, OSError) as error:
            sys.exit(f"proxy: cleanup of the NetworkPolicy table failed: {error}")
        print("removed the NetworkPolicy table" if gone else "no NetworkPolicy table")
        return
    try:
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="kube-proxy",
                                        trace_context=True)
    except KubeconfigError as error:
        sys.exit(f"proxy: {error}")
    config = ProxyConfig(node_name=args.hostname_override, cluster_cidr=args.cluster_cidr)

    async def run() -> None:
        registry = CollectorRegistry()
        async with client:
            proxier = Proxier(client, config, netns=args.netns, mode=args.proxy_mode,
                              sync_period=args.iptables_sync_period,
                              min_sync_period=args.iptables_min_sync_period, registry=registry,
                              tracer=tracer_for("kube-proxy", args.tracing_endpoint))
            enforcer = (NetworkPolicyController(client, config.node_name, netns=args.netns,
                                                tracer=proxier.tracer)
                        if args.network_policy == "true" else None)
            runners = []
            try:
                if enforcer is not None:
                    enforcer.run_in_background()
                for host, port in {args.healthz_bind_address, args.metrics_bind_address}:
                    runners.append(await serve_healthz(
                        host, port, lambda: proxier.last_sync_wall,
                        args.iptables_sync_period, lambda: generate_latest(registry)))
                await proxier.run()
            except RestoreError as error:
                sys.exit(f"proxy: {error}")
            except OSError as error:
                sys.exit(f"proxy: cannot listen: {error}")
            finally:
                if enforcer is not None:
                    await enforcer.stop()
                for runner in runners:
                    await runner.cleanup()
                await close_tracer(proxier.tracer)

    run_component("proxy", run)


if __name__ == "__main__":
    main()
