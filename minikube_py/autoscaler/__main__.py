"""`python -m minikube_py.autoscaler --kubeconfig F --nodes MIN:MAX:NAME [--scan-interval
10s] [--scale-down-unneeded-time 10m] ...`: the cluster autoscaler, with one node group:
hollow nodes run in this process (--cloud-provider=kubemark, the default), or real
network-namespace nodes of a `minikube-py up` cluster (--cloud-provider=minikube-py
--cloud-config=<home>/cluster.json, which `up --autoscale-nodes` gives it)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from pathlib import Path

from prometheus_client import CollectorRegistry

from minikube_py.api.duration import flag_duration
from minikube_py.api.quantity import QuantityError, memory_bytes
from minikube_py.autoscaler.nodegroup import HollowNodeGroup, NodeGroup
from minikube_py.autoscaler.static_autoscaler import AutoscalingOptions, ClusterAutoscaler
from minikube_py.client.component import run_component, serve_health
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.client.rest import Client
from minikube_py.kubelet.node_status import read_host_info


def node_group_flag(text: str) -> tuple[int, int, str]:
    """--nodes MIN:MAX:NAME, as upstream's."""
    parts = text.split(":")
    try:
        low, high, name = int(parts[0]), int(parts[1]), parts[2]
    except (IndexError, ValueError):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected MIN:MAX:NAME, e.g. 1:10:pool") from None
    if not 0 <= low <= high or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: need 0 <= MIN <= MAX and a name")
    return low, high, name


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.autoscaler",
                                     description="minikube-py cluster autoscaler")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--nodes", type=node_group_flag, required=True,
                        help="the node group, MIN:MAX:NAME: nodes NAME-0, NAME-1, ... "
                             "(hollow ones), NAME-1, NAME-2, ... (network-namespace ones)")
    parser.add_argument("--cloud-provider", choices=("kubemark", "minikube-py"),
                        default="kubemark",
                        help="kubemark: hollow nodes in this process; minikube-py: network-"
                             "namespace nodes of the cluster of --cloud-config (needs root)")
    parser.add_argument("--cloud-config", type=Path, default=None,
                        help="with --cloud-provider=minikube-py: the cluster's cluster.json")
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8085,
                        help="/healthz and /metrics (plain HTTP; upstream's 8085); 0 disables")
    parser.add_argument("--node-cpu", type=int, default=4,
                        help="cores of each new hollow node")
    parser.add_argument("--node-memory", default="8Gi", help="memory of each new hollow node")
    defaults = AutoscalingOptions()
    for option in ("scan_interval", "scale_down_unneeded_time",
                   "scale_down_delay_after_add", "max_graceful_termination_sec"):
        parser.add_argument("--" + option.replace("_", "-"), type=flag_duration,
                            default=getattr(defaults, option))
    parser.add_argument("--scale-down-enabled", type=lambda v: v.lower() == "true",
                        default=True)
    parser.add_argument("--scale-down-utilization-threshold", type=float,
                        default=defaults.scale_down_utilization_threshold)
    parser.add_argument("--max-empty-bulk-delete", type=int,
                        default=defaults.max_empty_bulk_delete)
    parser.add_argument("--write-status-configmap", type=lambda v: v.lower() == "true",
                        default=True)
    add_verbosity_flag(parser)
    args = parser.parse_args(argv)
    if args.cloud_provider == "minikube-py" and args.cloud_config is None:
        parser.error("--cloud-provider=minikube-py needs --cloud-config=<home>/cluster.json")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging(args.v)
    try:
        memory = memory_bytes(args.node_memory)
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="cluster-autoscaler")
    except QuantityError as error:
        sys.exit(f"autoscaler: --node-memory {args.node_memory}: {error}")
    except KubeconfigError as error:
        sys.exit(f"autoscaler: {error}")
    low, high, name = args.nodes
    options = AutoscalingOptions(**{f.name: getattr(args, f.name)
                                    for f in dataclasses.fields(AutoscalingOptions)
                                    if hasattr(args, f.name)})
    group: NodeGroup
    if args.cloud_provider == "minikube-py":
        from minikube_py.autoscaler.netns_nodegroup import NetnsNodeGroup

        group = NetnsNodeGroup(client, name, low, high, args.cloud_config.parent,
                               read_host_info(None))
    else:
        host = dataclasses.replace(read_host_info(None), cpus=args.node_cpu,
                                   memory_bytes=memory)
        group = HollowNodeGroup(client, name, low, high, host)

    async def serve() -> None:
        health = None
        if args.port:
            try:
                health = await serve_health(CollectorRegistry(), args.bind_address, args.port)
            except OSError as error:
                sys.exit(f"autoscaler: cannot listen on {args.bind_address}:{args.port}: "
                         f"{error}")
        try:
            async with client:
                await ClusterAutoscaler(client, group, options).run()
        finally:
            if health is not None:
                await asyncio.shield(health.cleanup())

    run_component("cluster-autoscaler", serve)


if __name__ == "__main__":
    main()
