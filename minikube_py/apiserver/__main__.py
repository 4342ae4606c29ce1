"""`python -m minikube_py.apiserver --etcd-servers URL[,URL] --bind-address A --port N`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from minikube_py.api.duration import flag_duration
from minikube_py.apiserver.auth.admission.chain import enabled_plugins
from minikube_py.apiserver.auth.audit import load_policy
from minikube_py.apiserver.auth.serviceaccount_tokens import (
    DEFAULT_ISSUER,
    load_public_key,
    load_signing_key,
)
from minikube_py.apiserver.features import DEFAULTS, parse_feature_gates
from minikube_py.apiserver.registry.allocators import (
    DEFAULT_NODE_PORT_RANGE,
    DEFAULT_SERVICE_CIDR,
    parse_port_range,
    parse_service_cidr,
)
from minikube_py.apiserver.server import APIServer, APIServerConfig
from minikube_py.apiserver.storage.encryption import load_encryption_config
from minikube_py.client.component import run_component
from minikube_py.client.logs import kv, setup_logging
from minikube_py.tracing.setup import read_tracing_config


def checked_by(parse: Callable[[str], object]) -> Callable[[str], str]:
    """An argparse type: the flag's text, once `parse` accepts it."""

    def check(text: str) -> str:
        try:
            parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
        return text

    return check


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m minikube_py.apiserver",
        description="The minikube-py API server: Kubernetes REST API on top of etcd.",
    )
    parser.add_argument("--etcd-servers", required=True,
                        help="comma-separated etcd client URLs, e.g. http://127.0.0.1:2379")
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--advertise-address", default="",
                        help="the address pods reach this server at (the kubernetes "
                             "Service's endpoint; default: the bind address, unless it is "
                             "loopback or 0.0.0.0)")
    parser.add_argument("--endpoint-reconciler-type", choices=("lease", "none"),
                        default="lease",
                        help="lease: the kubernetes Service's endpoints are the API servers "
                             "whose master lease in etcd is alive (several API servers); "
                             "none: leave them alone")
    parser.add_argument("--port", "--secure-port", type=int, default=6443,
                        help="the port to serve on (HTTPS with --tls-cert-file)")
    parser.add_argument("--tls-cert-file", default="",
                        help="the serving certificate (PEM); without it, plain HTTP")
    parser.add_argument("--tls-private-key-file", default="", help="its private key (PEM)")
    parser.add_argument("--client-ca-file", default="",
                        help="the CA whose client certificates authenticate users "
                             "(CN = user, O = groups)")
    parser.add_argument("--token-auth-file", default="",
                        help="bearer tokens, CSV lines token,user,uid[,\"group1,group2\"]")
    parser.add_argument("--enable-bootstrap-token-auth", nargs="?", const="true",
                        choices=("true", "false"), default="false",
                        help="bearer tokens abcdef.0123456789abcdef authenticate as "
                             "system:bootstrap:abcdef, checked against the Secrets "
                             "bootstrap-token-<id> in kube-system (how nodes join)")
    parser.add_argument("--anonymous-auth", choices=("true", "false"), default="true",
                        help="requests without credentials are system:anonymous "
                             "(false: 401)")
    parser.add_argument("--authorization-mode", type=authorization_modes,
                        default="AlwaysAllow",
                        help="who may do what: AlwaysAllow, or Node and/or RBAC, "
                             "comma-separated (e.g. Node,RBAC)")
    parser.add_argument("--kubelet-client-certificate", default="",
                        help="the client certificate (PEM) the API server shows kubelets; "
                             "with it, kubelets are reached over https")
    parser.add_argument("--kubelet-client-key", default="", help="its private key (PEM)")
    parser.add_argument("--kubelet-certificate-authority", default="",
                        help="the CA that signed the kubelets' serving certificates "
                             "(without it they are not checked)")
    parser.add_argument("--proxy-client-cert-file", default="",
                        help="the client certificate (PEM) the API server shows the https "
                             "backends of pods/proxy and services/proxy (kubeadm's "
                             "front-proxy-client); without it, none")
    parser.add_argument("--proxy-client-key-file", default="", help="its private key (PEM)")
    parser.add_argument("--enable-admission-plugins", default="",
                        help="admission plugins to run besides the default ones, "
                             "comma-separated (e.g. NodeRestriction)")
    parser.add_argument("--disable-admission-plugins", default="",
                        help="default admission plugins not to run, comma-separated")
    parser.add_argument("--service-account-signing-key-file", default="",
                        help="the private key (ECDSA P-256, PEM) ServiceAccount tokens are "
                             "signed with")
    parser.add_argument("--service-account-key-file", action="append", default=[],
                        help="a key (PEM) that checks ServiceAccount tokens; repeatable "
                             "(default: the signing key's public half)")
    parser.add_argument("--service-account-issuer", default=DEFAULT_ISSUER,
                        help="the iss claim of the tokens it signs and accepts")
    parser.add_argument("--api-audiences", default="",
                        help="comma-separated audiences a token must name one of "
                             "(default: the issuer)")
    parser.add_argument("--audit-policy-file", default="",
                        help="an audit.k8s.io/v1 Policy: what to audit, at which level")
    parser.add_argument("--audit-log-path", default="",
                        help="where audit events go, one JSON line each")
    parser.add_argument("--tracing-config-file", default="",
                        help="a TracingConfiguration (apiserver.config.k8s.io/v1): the "
                             "OTLP/HTTP endpoint spans go to and the sampling rate")
    parser.add_argument("--encryption-provider-config", default="",
                        help="an EncryptionConfiguration: which resources etcd holds "
                             "encrypted, with which keys")
    parser.add_argument("--max-requests-inflight", type=int, default=400)
    parser.add_argument("--max-mutating-requests-inflight", type=int, default=200)
    parser.add_argument("--enable-priority-and-fairness", choices=("true", "false"),
                        default="true",
                        help="API Priority and Fairness: share the two in-flight limits' "
                             "seats among priority levels, queue fairly per flow")
    parser.add_argument("--etcd-cafile", default="",
                        help="the CA that signed etcd's serving certificate (https etcd)")
    parser.add_argument("--etcd-certfile", default="",
                        help="the client certificate this server shows etcd")
    parser.add_argument("--etcd-keyfile", default="", help="its private key")
    parser.add_argument("--etcd-compaction-interval", type=flag_duration, default="5m",
                        help="how often to compact etcd history (0 disables)")
    parser.add_argument("--log-requests", choices=("true", "false"), default="true",
                        help="write one JSON log line per request")
    parser.add_argument("--service-cluster-ip-range", type=checked_by(parse_service_cidr),
                        default=DEFAULT_SERVICE_CIDR,
                        help="the IPv4 range cluster IPs of services are allocated from")
    parser.add_argument("--service-node-port-range", type=checked_by(parse_port_range),
                        default=DEFAULT_NODE_PORT_RANGE,
                        help="the ports NodePort services are allocated from, e.g. 30000-32767")
    parser.add_argument("--shutdown-delay-duration", type=flag_duration, default=0.0,
                        help="on SIGTERM, go on serving this long with /readyz failing "
                             "before the listener closes (0: at once)")
    parser.add_argument("--feature-gates", type=checked_by(parse_feature_gates), default="",
                        help="comma-separated Name=true|false pairs; known: "
                             + ", ".join(f"{name} (default {str(on).lower()})"
                                         for name, on in sorted(DEFAULTS.items())))
    parser.add_argument("--v", type=int, default=1, help="log verbosity (0 = warnings only)")
    parser.add_argument("--event-loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="the event loop to serve on; uvloop cuts watch latency "
                             "(benchmarks/RESULTS.md)")
    return parser


def authorization_modes(value: str) -> str:
    """--authorization-mode: AlwaysAllow alone, or Node and RBAC in any order."""
    modes = _names(value)
    known = ("AlwaysAllow", "Node", "RBAC")
    for mode in modes:
        if mode not in known:
            raise argparse.ArgumentTypeError(
                f"authorization-mode {mode!r} is not one of {', '.join(known)}")
    if not modes or ("AlwaysAllow" in modes and len(modes) > 1) or len(set(modes)) < len(modes):
        raise argparse.ArgumentTypeError(
            f"authorization-mode {value!r}: AlwaysAllow alone, or Node and/or RBAC once each")
    return ",".join(modes)


def _names(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


async def serve(config: APIServerConfig) -> None:
    """Serve until cancelled (SIGTERM, SIGINT), then shut down gracefully (APIServer's
    [graceful-termination] steps)."""
    server = APIServer(config)
    scheme = "https" if config.tls_cert_file else "http"
    try:
        await server.start()
        logging.getLogger("minikube_py.apiserver").info(kv(
            "Serving securely" if config.tls_cert_file else "Serving insecurely",
            address=f"{scheme}://{config.bind_address}:{server.port}"))
        await asyncio.Event().wait()
    except OSError as error:
        sys.exit(f"apiserver: {error}")
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:  # a bad file is one line, before anything starts
        if args.encryption_provider_config:
            load_encryption_config(Path(args.encryption_provider_config))
        if args.audit_policy_file:
            load_policy(Path(args.audit_policy_file))
        if args.tracing_config_file:
            read_tracing_config(Path(args.tracing_config_file))
        etcd_tls = [args.etcd_cafile, args.etcd_certfile, args.etcd_keyfile]
        if any(etcd_tls) and not all(etcd_tls):
            raise ValueError("--etcd-cafile, --etcd-certfile and --etcd-keyfile go together")
        secure = [url.strip().startswith("https://") for url in args.etcd_servers.split(",")
                  if url.strip()]
        if any(secure) != all(etcd_tls) or (any(secure) and not all(secure)):
            raise ValueError("https --etcd-servers need --etcd-cafile, --etcd-certfile and "
                             "--etcd-keyfile (and http ones none of them)")
        for path in etcd_tls:
            if path:
                Path(path).read_bytes()
        if args.service_account_signing_key_file:
            load_signing_key(Path(args.service_account_signing_key_file).read_bytes())
        for key_file in args.service_account_key_file:
            load_public_key(Path(key_file).read_bytes())
        admission_plugins = enabled_plugins(_names(args.enable_admission_plugins),
                                            _names(args.disable_admission_plugins))
    except (ValueError, OSError) as err:
        parser.error(str(err))
    # klog's header on every line; --v 1 (the default) shows each request, 0 warnings only
    setup_logging(args.v, logging.INFO if args.v >= 1 else logging.WARNING)
    config = APIServerConfig(
        etcd_servers=[s.strip() for s in args.etcd_servers.split(",") if s.strip()],
        bind_address=args.bind_address,
        advertise_address=args.advertise_address,
        endpoint_reconciler_type=args.endpoint_reconciler_type,
        port=args.port,
        max_requests_inflight=args.max_requests_inflight,
        max_mutating_requests_inflight=args.max_mutating_requests_inflight,
        enable_priority_and_fairness=args.enable_priority_and_fairness == "true",
        compaction_interval=args.etcd_compaction_interval,
        log_requests=args.log_requests == "true",
        service_cluster_ip_range=args.service_cluster_ip_range,
        service_node_port_range=args.service_node_port_range,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        client_ca_file=args.client_ca_file,
        token_auth_file=args.token_auth_file,
        enable_bootstrap_token_auth=args.enable_bootstrap_token_auth == "true",
        anonymous_auth=args.anonymous_auth == "true",
        authorization_mode=args.authorization_mode,
        admission_plugins=admission_plugins,
        kubelet_client_certificate=args.kubelet_client_certificate,
        kubelet_client_key=args.kubelet_client_key,
        kubelet_certificate_authority=args.kubelet_certificate_authority,
        proxy_client_cert_file=args.proxy_client_cert_file,
        proxy_client_key_file=args.proxy_client_key_file,
        encryption_provider_config=args.encryption_provider_config,
        audit_policy_file=args.audit_policy_file,
        audit_log_path=args.audit_log_path,
        tracing_config_file=args.tracing_config_file,
        etcd_cafile=args.etcd_cafile,
        etcd_certfile=args.etcd_certfile,
        etcd_keyfile=args.etcd_keyfile,
        service_account_signing_key_file=args.service_account_signing_key_file,
        service_account_key_files=tuple(args.service_account_key_file),
        service_account_issuer=args.service_account_issuer,
        api_audiences=tuple(a.strip() for a in args.api_audiences.split(",") if a.strip()),
        shutdown_delay=args.shutdown_delay_duration,
        feature_gates=parse_feature_gates(args.feature_gates),
    )
    # The watch caches keep every object as dicts, so a full collection walks them all and
    # stalls the event loop (~140 ms each with 5,000 pods cached); run_component collects
    # far less often (see benchmarks/RESULTS.md).
    run_component("apiserver", lambda: serve(config), event_loop=args.event_loop)


if __name__ == "__main__":
    main()
