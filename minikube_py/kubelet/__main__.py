"""`python -m minikube_py.kubelet --node-name N --kubeconfig F --container-runtime-endpoint unix://...`

Or `--runtime simulated` for a hollow node without containers, and `--simulate N` for N
hollow nodes in one process (like kubemark), for scheduler and controller benchmarks.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from pathlib import Path

from minikube_py.api.duration import flag_duration
from minikube_py.client.component import run_component
from minikube_py.client.errors import APIStatusError
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.client.rest import Client, ConnectionFailed
from minikube_py.cri import RemoteRuntime, RuntimeService
from minikube_py.kubelet import certificate
from minikube_py.kubelet.auth import KubeletAuthConfig
from minikube_py.kubelet.config_file import FILE_CHECK_FREQUENCY
from minikube_py.kubelet.kubelet import Kubelet, KubeletConfig
from minikube_py.kubelet.node_status import read_host_info
from minikube_py.kubelet.simulated import SimulatedRuntime
from minikube_py.tracing.setup import add_tracing_flag, close_tracer, tracer_for

DEFAULT_ROOT = Path("/var/lib/minikube-py/kubelet")


def _key_values(text: str) -> dict[str, str]:
    """'cpu=100m,memory=256Mi' -> {'cpu': '100m', 'memory': '256Mi'}."""
    pairs = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"expected key=value, got {item!r}")
        pairs[key] = value
    return pairs


def _taints(text: str) -> list[dict[str, str]]:
    """'key=value:Effect,key2:Effect' -> taints (upstream's --register-with-taints)."""
    taints = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        spec, sep, effect = item.rpartition(":")
        if not sep or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise argparse.ArgumentTypeError(f"invalid taint {item!r}: expected "
                                             "key[=value]:NoSchedule|PreferNoSchedule|NoExecute")
        key, _, value = spec.partition("=")
        taints.append({"key": key, "value": value, "effect": effect} if value
                      else {"key": key, "effect": effect})
    return taints


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.kubelet",
                                     description="minikube-py kubelet (node agent)")
    parser.add_argument("--node-name", default=socket.gethostname())
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--bootstrap-kubeconfig", default="",
                        help="when --kubeconfig has no good client certificate: ask the "
                             "cluster for one as this kubeconfig's user (a bootstrap "
                             "token), then write --kubeconfig")
    parser.add_argument("--cert-dir", type=Path, default=None,
                        help="where the client certificate goes (default <root-dir>/pki)")
    parser.add_argument("--rotate-certificates", action="store_true",
                        help="renew the client certificate before it expires")
    parser.add_argument("--runtime", choices=("remote", "simulated"), default="remote",
                        help="remote: a CRI runtime at --container-runtime-endpoint; "
                             "simulated: an in-process fake (no containers)")
    parser.add_argument("--container-runtime-endpoint",
                        default="unix:///run/containerd/containerd.sock")
    parser.add_argument("--pod-cidr", default=None)
    parser.add_argument("--root-dir", type=Path, default=None,
                        help=f"pod volumes and claims (default {DEFAULT_ROOT}/<node>)")
    parser.add_argument("--pod-logs-dir", type=Path, default=None,
                        help="container logs (default <root-dir>/logs)")
    parser.add_argument("--address", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=10250)
    parser.add_argument("--node-ip", default=None)
    parser.add_argument("--healthz-port", type=int, default=0,
                        help="serve /healthz alone, plain HTTP, on this port too "
                             "(0: only on --port)")
    parser.add_argument("--tls-cert-file", default="",
                        help="the API's serving certificate (PEM); without it, plain HTTP")
    parser.add_argument("--tls-private-key-file", default="", help="its private key (PEM)")
    parser.add_argument("--rotate-server-certificates", action="store_true",
                        help="without --tls-cert-file: ask the cluster for the serving "
                             "certificate (a kubelet-serving CSR, in --cert-dir), serve "
                             "the API once it is issued, and renew it before it expires")
    parser.add_argument("--client-ca-file", default="",
                        help="the CA whose client certificates authenticate callers")
    parser.add_argument("--anonymous-auth", choices=("true", "false"), default="true",
                        help="requests without credentials are system:anonymous "
                             "(false: 401)")
    parser.add_argument("--authentication-token-webhook", action="store_true",
                        help="check bearer tokens with a TokenReview")
    parser.add_argument("--authorization-mode", choices=("AlwaysAllow", "Webhook"),
                        default="AlwaysAllow",
                        help="Webhook: ask the API server with a SubjectAccessReview")
    parser.add_argument("--cluster-dns", default="", help="comma-separated DNS server IPs")
    parser.add_argument("--cluster-domain", default="cluster.local")
    parser.add_argument("--kube-reserved", type=_key_values, default={})
    parser.add_argument("--system-reserved", type=_key_values, default={})
    parser.add_argument("--eviction-hard",
                        default="memory.available<100Mi,nodefs.available<10%")
    parser.add_argument("--node-labels", type=_key_values, default={})
    parser.add_argument("--register-with-taints", type=_taints, default=[])
    parser.add_argument("--max-parallel-starts", type=int, default=3,
                        help="pods whose sandbox and containers start at the same time")
    parser.add_argument("--pod-manifest-path", type=Path, default=None,
                        help="a folder (or one file) of static pod manifests, one pod per "
                             "file, run with or without an API server (staticPodPath)")
    parser.add_argument("--file-check-frequency", type=flag_duration,
                        default=FILE_CHECK_FREQUENCY,
                        help="how often the manifests are looked at for changes (default 1s)")
    add_tracing_flag(parser)
    parser.add_argument("--simulate", type=int, default=0, metavar="N",
                        help="run N hollow nodes (simulated runtime) in this process")
    parser.add_argument("--simulated-start-delay", type=float, default=0.0,
                        help="seconds a simulated container takes to start")
    parser.add_argument("--simulated-token-file", type=Path, default=None,
                        help="with --simulate: lines token,user,uid[,groups] (the API "
                             "server's --token-auth-file); each hollow node sends the "
                             "token of user system:node:<its name>")
    add_verbosity_flag(parser)
    return parser.parse_args(argv)


def kubelet_config(args: argparse.Namespace, cert_dir: Path | None = None) -> KubeletConfig:
    root = args.root_dir or DEFAULT_ROOT / args.node_name
    return KubeletConfig(
        node_name=args.node_name, root_dir=root, logs_root=args.pod_logs_dir or root / "logs",
        pod_cidr=args.pod_cidr, address=args.address, port=args.port,
        cluster_dns=[ip for ip in args.cluster_dns.split(",") if ip],
        cluster_domain=args.cluster_domain, kube_reserved=args.kube_reserved,
        system_reserved=args.system_reserved, eviction_hard=args.eviction_hard,
        node_labels=args.node_labels, register_taints=args.register_with_taints,
        max_parallel_starts=args.max_parallel_starts,
        static_pod_path=args.pod_manifest_path, file_check_frequency=args.file_check_frequency,

        hollow=args.runtime == "simulated",
        tls_cert_file=args.tls_cert_file, tls_private_key_file=args.tls_private_key_file,
        client_ca_file=args.client_ca_file, healthz_port=args.healthz_port,
        serving_cert_dir=cert_dir if args.rotate_server_certificates else None,
        auth=KubeletAuthConfig(anonymous=args.anonymous_auth == "true",
                               token_webhook=args.authentication_token_webhook,
                               authorization_mode=args.authorization_mode))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging(args.v)
    cert_dir = args.cert_dir or (args.root_dir or DEFAULT_ROOT / args.node_name) / "pki"
    try:
        if args.bootstrap_kubeconfig:
            if not args.kubeconfig:
                raise KubeconfigError("--bootstrap-kubeconfig needs --kubeconfig: the file "
                                      "to write the earned credentials to")
            asyncio.run(certificate.bootstrap(args.node_name, Path(args.kubeconfig),
                                              Path(args.bootstrap_kubeconfig), cert_dir))
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="kubelet",
                                        trace_context=True)
    except (KubeconfigError, certificate.CertificateRequestFailed, APIStatusError,
            ConnectionFailed, OSError) as error:
        sys.exit(f"kubelet: {error}")
    if args.simulate:
        from minikube_py.kubelet.hollow import run_hollow_nodes
        run_component("kubelet", lambda: run_hollow_nodes(client, args))
        return
    config = kubelet_config(args, cert_dir)

    async def run() -> None:
        runtime: RuntimeService = (
            SimulatedRuntime(pod_cidr=args.pod_cidr or "10.250.0.0/24",
                             start_delay=args.simulated_start_delay)
            if args.runtime == "simulated" else RemoteRuntime(args.container_runtime_endpoint))
        config.root_dir.mkdir(parents=True, exist_ok=True)
        host = read_host_info(config.root_dir, node_ip=args.node_ip, hostname=config.node_name)
        async with client, asyncio.TaskGroup() as tasks:
            if args.rotate_certificates and certificate.current(cert_dir) is not None:
                tasks.create_task(certificate.CertificateRotation(
                    client, config.node_name, cert_dir, client.reload_client_certificate
                ).run())
            tracer = tracer_for("kubelet", args.tracing_endpoint)
            try:
                await Kubelet(config, client, runtime, host, tracer=tracer).run()
            finally:
                await runtime.close()
                await close_tracer(tracer)

    run_component("kubelet", run)


if __name__ == "__main__":
    main()
