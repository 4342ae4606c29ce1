"""`python -m minikube_py.autoscaler --kubeconfig F --nodes MIN:MAX:NAME [--scan-interval
10s] [--scale-down-unneeded-time 10m] ...`: the cluster autoscaler, with a node group of
hollow nodes run in this process (the only kind of node group so far)."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from minikube_py.api.duration import flag_duration
from minikube_py.api.quantity import QuantityError, memory_bytes
from minikube_py.autoscaler.nodegroup import HollowNodeGroup
from minikube_py.autoscaler.static_autoscaler import AutoscalingOptions, ClusterAutoscaler
from minikube_py.client.component import run_component
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
                        help="the node group, MIN:MAX:NAME: hollow nodes NAME-0, NAME-1, ... "
                             "in this process")
    parser.add_argument("--node-cpu", type=int, default=4, help="cores of each new node")
    parser.add_argument("--node-memory", default="8Gi", help="memory of each new node")
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
    return parser.parse_args(argv)


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
    host = dataclasses.replace(read_host_info(None), cpus=args.node_cpu, memory_bytes=memory)

    async def serve() -> None:
        async with client:
            await ClusterAutoscaler(client, HollowNodeGroup(client, name, low, high, host),
                                    options).run()

    run_component("cluster-autoscaler", serve)


if __name__ == "__main__":
    main()
