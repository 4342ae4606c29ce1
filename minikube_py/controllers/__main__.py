"""`python -m minikube_py.controllers --kubeconfig F [--controllers=*,-name] [--leader-elect]`"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from minikube_py.api.duration import flag_duration
from minikube_py.client.component import run_component
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.client.rest import Client
from minikube_py.controllers.base import ControllerOptions
from minikube_py.controllers.manager import ControllerManager, select_controllers
from minikube_py.controllers.registry import ALL_CONTROLLERS
from minikube_py.controllers.servicelb import parse_range
from minikube_py.security.pki import KeyPair
from minikube_py.tracing.setup import add_tracing_flag, tracer_for

HPA_FLAGS = (
    "horizontal_pod_autoscaler_sync_period", "horizontal_pod_autoscaler_downscale_stabilization",
    "horizontal_pod_autoscaler_tolerance", "horizontal_pod_autoscaler_cpu_initialization_period",
    "horizontal_pod_autoscaler_initial_readiness_delay",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.controllers",
                                     description="minikube-py controller-manager")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--controllers", default="*",
                        help="comma-separated: '*' for those on by default, 'name' to "
                             "enable, '-name' to disable; known: "
                             + ",".join(c.name for c in ALL_CONTROLLERS)
                             + "; off by default: "
                             + ",".join(c.name for c in ALL_CONTROLLERS
                                        if not c.enabled_by_default))
    parser.add_argument("--leader-elect", action="store_true",
                        help="run only while holding the kube-system/kube-controller-manager "
                             "Lease")
    parser.add_argument("--leader-elect-lease-duration", type=flag_duration, default=15.0)
    parser.add_argument("--leader-elect-renew-deadline", type=flag_duration, default=10.0)
    parser.add_argument("--leader-elect-retry-period", type=flag_duration, default=2.0)
    parser.add_argument("--node-monitor-grace-period", type=flag_duration, default=40.0,
                        help="how long without a node Lease renewal before the node is "
                             "marked Unknown (40s, or seconds)")
    parser.add_argument("--node-monitor-period", type=flag_duration, default=5.0)
    parser.add_argument("--loadbalancer-ip-range", default=ControllerOptions.loadbalancer_ip_range,
                        help="addresses for LoadBalancer Services: FIRST-LAST or a CIDR")
    parser.add_argument("--loadbalancer-class", default=None,
                        help="serve the LoadBalancer Services of this loadBalancerClass "
                             "(default: those that name no class)")
    parser.add_argument("--resource-quota-sync-period", type=flag_duration, default=300.0,
                        help="how often every ResourceQuota's usage is recounted in full "
                             "(5m, or seconds; 0 disables)")
    parser.add_argument("--use-service-account-credentials", action="store_true",
                        help="each controller calls the API server as its own "
                             "kube-system ServiceAccount")
    parser.add_argument("--root-ca-file", default="",
                        help="the cluster CA (PEM), published to every namespace as the "
                             "ConfigMap kube-root-ca.crt")
    parser.add_argument("--cluster-signing-cert-file", default="",
                        help="the CA (PEM) csrsigning signs kubernetes.io signers' requests "
                             "with; without it and the key, csrsigning does not run")
    parser.add_argument("--cluster-signing-key-file", default="")
    parser.add_argument("--cluster-signing-duration", type=flag_duration,
                        default=ControllerOptions.cluster_signing_duration,
                        help="how long signed certificates last (default 8760h0m0s)")
    add_tracing_flag(parser)
    parser.add_argument("--horizontal-pod-autoscaler-sync-period", type=flag_duration,
                        default=ControllerOptions.horizontal_pod_autoscaler_sync_period,
                        help="how often every HorizontalPodAutoscaler is synced (15s)")
    parser.add_argument("--horizontal-pod-autoscaler-downscale-stabilization",
                        type=flag_duration,
                        default=ControllerOptions.horizontal_pod_autoscaler_downscale_stabilization,
                        help="how far back recommendations hold a scale-down (5m0s)")
    parser.add_argument("--horizontal-pod-autoscaler-tolerance", type=float,
                        default=ControllerOptions.horizontal_pod_autoscaler_tolerance,
                        help="the usage ratio distance from 1.0 that scales nothing (0.1)")
    parser.add_argument("--horizontal-pod-autoscaler-cpu-initialization-period",
                        type=flag_duration,
                        default=ControllerOptions.horizontal_pod_autoscaler_cpu_initialization_period,
                        help="after a pod starts, how long its CPU samples are skipped (5m0s)")
    parser.add_argument("--horizontal-pod-autoscaler-initial-readiness-delay",
                        type=flag_duration,
                        default=ControllerOptions.horizontal_pod_autoscaler_initial_readiness_delay,
                        help="after a pod starts, how long readiness changes count as initial "
                             "(30s)")
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=10257, help="/healthz and /metrics "
                        "(plain HTTP); 0 disables")
    parser.add_argument("--identity", default=None, help="leader election identity")
    add_verbosity_flag(parser)
    return parser.parse_args(argv)


def signing_authority(cert_file: str, key_file: str) -> KeyPair | None:
    """The CA of --cluster-signing-cert-file and --cluster-signing-key-file, or None."""
    if not cert_file and not key_file:
        return None
    if not cert_file or not key_file:
        raise ValueError("--cluster-signing-cert-file and --cluster-signing-key-file go "
                         "together")
    return KeyPair.read_files(Path(cert_file), Path(key_file))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging(args.v)
    try:
        controllers = select_controllers(args.controllers.split(","), ALL_CONTROLLERS)
        parse_range(args.loadbalancer_ip_range)
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="controller-manager",
                                        trace_context=True)
        root_ca = Path(args.root_ca_file).read_text() if args.root_ca_file else ""
        signing_ca = signing_authority(args.cluster_signing_cert_file,
                                       args.cluster_signing_key_file)
    except (ValueError, KubeconfigError, OSError) as error:
        sys.exit(f"controller-manager: {error}")
    manager = ControllerManager(
        client, controllers, leader_elect=args.leader_elect, identity=args.identity,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        options=ControllerOptions(node_monitor_grace_period=args.node_monitor_grace_period,
                                  node_monitor_period=args.node_monitor_period,
                                  loadbalancer_ip_range=args.loadbalancer_ip_range,
                                  loadbalancer_class=args.loadbalancer_class,
                                  resource_quota_sync_period=args.resource_quota_sync_period,
                                  root_ca=root_ca, cluster_signing_ca=signing_ca,
                                  cluster_signing_duration=args.cluster_signing_duration,
                                  **{name: getattr(args, name) for name in HPA_FLAGS}),
        bind_address=args.bind_address, port=args.port or None,
        use_service_account_credentials=args.use_service_account_credentials,
        tracer=tracer_for("kube-controller-manager", args.tracing_endpoint),
    )

    async def run() -> None:
        async with client:
            await manager.run()

    run_component("controller-manager", run)

if __name__ == "__main__":
    main()
