"""The set-up steps of the Docker cluster (docker-compose.yml at the repository root).

The compose file runs the same secured cluster as `minikube-py up`, one service per
component, from one image (Dockerfile). The steps that need the project's own code rather
than a component's command line, in the order the cluster comes up:

    pki (once, first)          certs: the CA, the certificates and kubeconfigs `up` makes
                               (cluster/certs.py), kept in the pki volume; then each
                               service's own files (shares) copied into a volume of its
                               own, which only that service mounts, read-only: the CA's
                               key goes to the controller-manager alone
    join-info (once the API server answers)
                               publish-join-info: what `up` does then (cluster/join.py):
                               the DNS's and metrics server's roles, a bootstrap token
                               (written where the nodes read it), cluster-info and the
                               bootstrap RBAC; then the admin's kubeconfig,
                               naming the API server as the host reaches it, into the
                               folder docker-compose.yml bind-mounts (compose/kubeconfig)
    node-N (compose/node.sh)   join: kubeadm join's discovery, trusting the cluster through
                               the token and the CA's hash, writing the kubelet's bootstrap
                               kubeconfig; runtime-config: containerd's config.toml and the
                               CNI network of the node, as `up` writes them for its node
    images (once)              push-images: the shipped images (built into the image by
                               `minikube-py image build`) into the registry service,
                               where every node's containerd pulls them from

`python -m minikube_py.cluster.compose STEP --help` shows each step's flags.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import shutil
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

import yaml

from minikube_py.client.errors import ClientError
from minikube_py.client.kubeconfig import KubeconfigError, load_kubeconfig
from minikube_py.cluster.bootstraptoken import DiscoveryError, ca_cert_hash
from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.cluster.cli import tracing_config, tracing_configuration
from minikube_py.cluster.image_command import push_catalog
from minikube_py.cluster.join import JoinInfo, join_node, publish_cluster_objects, token_file
from minikube_py.cluster.runtime_setup import (
    NodeRuntimeConfig,
    write_cni_config,
    write_containerd_config,
)
from minikube_py.cluster.tracestore import publish_trace_receiver
from minikube_py.images.debian import PackageError
from minikube_py.images.registry import ArchiveError, RegistryError


def shares(certs: ClusterCertificates, nodes: Iterable[str]) -> dict[str, tuple[Path, ...]]:
    """Who may read which of the cluster's files: what its flags name, nothing more.
    "admin" is the join-info step's (and what a user copies out to run kubectl)."""
    etcd = certs.etcd_tls()
    tracing = tracing_config(certs.state)
    return {
        "etcd": (etcd.ca_file, etcd.cert_file, etcd.key_file, etcd.peer_cert_file,
                 etcd.peer_key_file, Path(etcd.client.cert_file),
                 Path(etcd.client.key_file)),
        "apiserver": (certs.ca_file, certs.file("apiserver.crt"), certs.file("apiserver.key"),
                      certs.file("apiserver-kubelet-client.crt"),
                      certs.file("apiserver-kubelet-client.key"), certs.service_account_key,
                      etcd.ca_file, certs.file("apiserver-etcd-client.crt"),
                      certs.file("apiserver-etcd-client.key"),
                      certs.front_proxy().cert_file, certs.front_proxy().key_file,
                      *((tracing,) if tracing.exists() else ())),
        "controller-manager": (certs.ca_file, certs.file("ca.key"),
                               certs.kubeconfig("controller-manager")),
        "scheduler": (certs.kubeconfig("scheduler"),),
        "dns": (certs.kubeconfig("dns"),),
        "metrics": (certs.kubeconfig("metrics"),),
        "admin": (certs.kubeconfig("admin"),),
        **{node: (certs.ca_file, *certs.kubelet_serving(node), certs.kubeconfig("proxy"))
           for node in nodes},
    }


def copy_share(certs: ClusterCertificates, files: tuple[Path, ...], share: Path) -> None:
    """`files` into `share` at the same places under it as under the state directory,
    each with its mode (keys stay owner-only) and replaced at once."""
    for source in files:
        target = share / source.relative_to(certs.state)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = target.with_name(f"{target.name}.tmp")
        tmp.unlink(missing_ok=True)
        tmp.touch(mode=0o600)
        shutil.copyfile(source, tmp)
        tmp.chmod(stat.S_IMODE(source.stat().st_mode))
        tmp.replace(target)


def make_certificates(args: argparse.Namespace) -> None:
    """The CA, the certificates and kubeconfigs (kept when there, as `up` keeps them),
    then each service's share."""
    certs = ClusterCertificates(args.state)
    nodes = dict(args.node)
    try:
        certs.ensure(args.server, tuple(args.address), nodes)
        if args.tracing_endpoint:
            tracing_config(certs.state).write_text(tracing_configuration(args.tracing_endpoint))
        print(f"wrote the cluster's certificates and kubeconfigs in {args.state}")
        for who, files in shares(certs, nodes).items():
            copy_share(certs, files, args.shares / who)
            print(f"wrote {args.shares / who}: "
                  f"{', '.join(str(file.relative_to(certs.state)) for file in files)}")
    except (OSError, ValueError) as error:
        sys.exit(f"certs: {error}")


def publish_join_info(args: argparse.Namespace) -> None:
    """As `up` once its API server runs, as the admin of --kubeconfig (whose CA is the
    cluster's): the token goes to --state, where the nodes read it."""
    try:
        ca_file = load_kubeconfig(args.kubeconfig).ca_file
        if ca_file is None:
            raise KubeconfigError(f"{args.kubeconfig} names no certificate authority")
        join = asyncio.run(publish_cluster_objects(args.kubeconfig, args.state, args.server,
                                                   Path(ca_file).read_bytes()))
        if args.trace_receiver_url:
            asyncio.run(publish_trace_receiver(args.kubeconfig, args.trace_receiver_url))
        if args.kubeconfig_out:
            write_user_kubeconfig(args.kubeconfig, args.kubeconfig_out,
                                  args.kubeconfig_server or args.server)
    except (KubeconfigError, ClientError, OSError, ValueError) as error:
        sys.exit(f"publish-join-info: {error}")
    print(f"wrote {token_file(args.state)}")
    print(f"nodes join with: {join.command()}")
    if args.kubeconfig_out:
        print(f"wrote {args.kubeconfig_out} (the admin's, for {args.kubeconfig_server})")


def write_user_kubeconfig(admin: Path, target: Path, server: str) -> None:
    """The admin's kubeconfig with every cluster at `server`, owner-only, replaced at once."""
    config = yaml.safe_load(admin.read_text())
    for cluster in config.get("clusters") or []:
        cluster["cluster"]["server"] = server
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.unlink(missing_ok=True)
    tmp.touch(mode=0o600)
    tmp.write_text(yaml.safe_dump(config, sort_keys=False))
    tmp.replace(target)


def join(args: argparse.Namespace) -> None:
    """kubeadm join's discovery: trust the cluster through the token and the CA's hash
    (--discovery-token-ca-cert-hash, or that of --ca-cert), then write the kubelet's
    --bootstrap-kubeconfig."""
    try:
        token = args.token_file.read_text().strip()
    except OSError as error:
        sys.exit(f"join: cannot read the bootstrap token ({error}); the join-info step "
                 "writes it")
    try:
        ca_hash = args.discovery_token_ca_cert_hash or ca_cert_hash(args.ca_cert.read_bytes())
    except (OSError, ValueError) as error:
        sys.exit(f"join: cannot read a PEM certificate from --ca-cert {args.ca_cert}: {error}")
    try:
        written = asyncio.run(join_node(JoinInfo(args.server, token, ca_hash),
                                        args.bootstrap_kubeconfig))
    except (DiscoveryError, OSError) as error:
        sys.exit(f"join: {error}")
    print(f"wrote {written}")


def node_runtime(args: argparse.Namespace) -> NodeRuntimeConfig:
    """The node's runtime layout under --base-dir, pulling through --registry."""
    return NodeRuntimeConfig(node_name=args.node_name, base_dir=args.base_dir,
                             pod_cidr=args.pod_cidr, registry=args.registry)


def runtime_config(args: argparse.Namespace) -> None:
    """Write the node's containerd config.toml and CNI network config."""
    config = node_runtime(args)
    config.base_dir.mkdir(parents=True, exist_ok=True)
    print(f"wrote {write_containerd_config(config)}")
    print(f"wrote {write_cni_config(config)}")


def push_images(args: argparse.Namespace) -> None:
    """Push every shipped image archive in --images to the registry, under all its names."""
    try:
        for line in push_catalog(args.images, args.registry, rebuild=False):
            print(line)
    except (PackageError, RegistryError, ArchiveError, OSError, ValueError) as error:
        sys.exit(f"push-images: {error}")


def ip_address(value: str) -> str:
    """--address IP."""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an IP address: {value!r}") from None


def node_address(value: str) -> tuple[str, str]:
    """--node NAME=IP."""
    name, equals, address = value.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"want NAME=IP, e.g. node-1=10.210.0.11, not "
                                         f"{value!r}")
    return name, ip_address(address)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.cluster.compose",
                                     description="set-up steps of docker-compose.yml")
    steps = parser.add_subparsers(dest="step", required=True)
    certs = steps.add_parser("certs", help="write the cluster's CA, certificates and "
                             "kubeconfigs, and each service's share of them")
    certs.add_argument("--state", type=Path, required=True,
                       help="where they are kept (pki/, kubeconfigs/, as `up` lays them out)")
    certs.add_argument("--server", required=True, metavar="URL",
                       help="the API server, as the kubeconfigs name it "
                            "(https://apiserver:6443); its host is in its certificate")
    certs.add_argument("--address", action="append", default=[], type=ip_address,
                       metavar="IP",
                       help="another address of the API server for its certificate "
                            "(repeat it for more)")
    certs.add_argument("--node", action="append", default=[], type=node_address,
                       metavar="NAME=IP", help="a node, for its kubelet's serving "
                                               "certificate (repeat it for more)")
    certs.add_argument("--shares", type=Path, required=True,
                       help="each service's share goes to <shares>/<service> (for a node: "
                            "its name; for the join-info step: admin)")
    certs.add_argument("--tracing-endpoint", default="", metavar="HOST:PORT",
                       help="write the API server's TracingConfiguration (tracing.yaml, in "
                            "its share) sending its spans to this OTLP receiver")
    certs.set_defaults(run=make_certificates)
    publish = steps.add_parser("publish-join-info", help="once the API server runs: the "
                               "component roles, a bootstrap token and cluster-info")
    publish.add_argument("--kubeconfig", type=Path, required=True, help="the admin's")
    publish.add_argument("--state", type=Path, required=True,
                         help="the token goes to <state>/pki/bootstrap-token (a token still "
                              "good there is kept)")
    publish.add_argument("--server", required=True, metavar="URL",
                         help="the API server as the nodes reach it, published in "
                              "cluster-info")
    publish.add_argument("--trace-receiver-url", default="", metavar="URL",
                         help="publish the trace receiver's query URL, as users reach it, "
                              "for `mkctl trace` (kube-public/minikube-py-tracing)")
    publish.add_argument("--kubeconfig-out", type=Path, default=None, metavar="PATH",
                         help="also write the admin's kubeconfig here, for users")
    publish.add_argument("--kubeconfig-server", default="", metavar="URL",
                         help="the API server as users reach it, in --kubeconfig-out "
                              "(default: --server)")
    publish.set_defaults(run=publish_join_info)
    joining = steps.add_parser("join", help="discover the cluster with a bootstrap token and "
                               "write the kubelet's bootstrap kubeconfig")
    joining.add_argument("--server", required=True, metavar="URL")
    joining.add_argument("--token-file", type=Path, required=True,
                         help="the bootstrap token (publish-join-info writes it)")
    pin = joining.add_mutually_exclusive_group(required=True)
    pin.add_argument("--discovery-token-ca-cert-hash", metavar="sha256:HEX",
                     help="the CA's public key hash, as kubeadm join takes it")
    pin.add_argument("--ca-cert", type=Path, help="the CA certificate, to pin its hash")
    joining.add_argument("--bootstrap-kubeconfig", type=Path, required=True,
                         help="where the kubelet's bootstrap kubeconfig is written")
    joining.set_defaults(run=join)
    runtime = steps.add_parser("runtime-config",
                               help="write a node's containerd config and CNI network")
    runtime.add_argument("--node-name", required=True)
    runtime.add_argument("--pod-cidr", required=True, help="this node's pods, e.g. "
                         "10.244.1.0/24")
    runtime.add_argument("--base-dir", type=Path, required=True,
                         help="containerd's config, socket, root and state, and the CNI "
                              "network's files")
    runtime.add_argument("--registry", default="", metavar="HOST:PORT",
                         help="the cluster's registry, for docker.io, registry.k8s.io and "
                              "localhost images (none: images come from nowhere)")
    runtime.set_defaults(run=runtime_config)
    images = steps.add_parser("push-images", help="push the shipped images to the registry")
    images.add_argument("--registry", required=True, metavar="HOST:PORT")
    images.add_argument("--images", type=Path, required=True,
                        help="the archives `minikube-py image build --output` wrote")
    images.set_defaults(run=push_images)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
