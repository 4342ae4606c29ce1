"""The set-up steps of the Docker cluster (docker-compose.yml at the repository root).

The compose file runs the cluster `minikube-py up` builds (its kubeadm layout, kind's way):
a control-plane node container whose kubelet runs etcd, the API server, the
controller-manager and the scheduler as static pods, two worker node containers, and
kube-proxy, DNS, the metrics server and the local-path provisioner as add-ons, all from
one image (Dockerfile). The steps that need the project's own code rather than a
component's command line, in the order the cluster comes up (each a kubeadm phase,
cluster/kubeadm/init.py):

    (docker build)             component-images: the component images
                               (images/components.py) as an OCI layout in the image, and
                               their references
    pki (once, first)          certs (kubeadm's certs and kubeconfig phases): the CA, the
                               certificates and kubeconfigs `up` makes (cluster/certs.py)
                               and the control-plane node's kubelet.conf, kept in the pki
                               volume; then each node's own files (shares) copied into a
                               volume of its own, which only that node mounts, read-only:
                               the CA's key, etcd's and the API server's go to the
                               control-plane node alone, as kubeadm leaves them there
    images (once)              push-images: the shipped images (`minikube-py image build`)
                               and the component images into the registry service, where
                               every node's containerd pulls them from
    control-plane (compose/node.sh)
                               static-pods (kubeadm's etcd and control-plane phases): the
                               four manifests (kubeadm/controlplane.py) into its kubelet's
                               --pod-manifest-path; runtime-config
    init (once the API server answers)
                               init: the rest of kubeadm init (upload-config,
                               bootstrap-token, mark-control-plane, the add-ons of
                               kubeadm/addons.py, the default StorageClass), then the
                               admin's kubeconfig, naming the API server as the host
                               reaches it, into the folder docker-compose.yml bind-mounts
                               (compose/kubeconfig)
    node-N (compose/node.sh)   join: kubeadm join's discovery, trusting the cluster through
                               the token and the CA's hash, writing the kubelet's bootstrap
                               kubeconfig; runtime-config: containerd's config.toml and the
                               CNI network of the node, as `up` writes them for its node

`python -m minikube_py.cluster.compose STEP --help` shows each step's flags.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import shutil
import stat
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from minikube_py.client.errors import ClientError
from minikube_py.client.kubeconfig import KubeconfigError, load_kubeconfig
from minikube_py.cluster.bootstraptoken import DiscoveryError, ca_cert_hash
from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.cluster.cli import DEFAULT_PORTS, tracing_config, tracing_configuration
from minikube_py.cluster.image_command import push_catalog
from minikube_py.cluster.join import JoinInfo, join_node, publish_cluster_objects, token_file
from minikube_py.cluster.kubeadm.addons import (
    Addons,
    addon_objects,
    local_path_provisioner_objects,
)
from minikube_py.cluster.kubeadm.controlplane import ControlPlane, HostPaths, write_static_pods
from minikube_py.cluster.kubeadm.init import apply_addons, mark_control_plane
from minikube_py.cluster.runtime_setup import (
    NodeRuntimeConfig,
    write_cni_config,
    write_containerd_config,
)
from minikube_py.cluster.storage import ensure_default_storage_class
from minikube_py.cluster.tracestore import publish_trace_receiver
from minikube_py.images.components import ComponentImageError, build_component_images
from minikube_py.images.components import push_component_images as push_components
from minikube_py.images.debian import PackageError
from minikube_py.images.registry import ArchiveError, RegistryError

REFERENCES = "references.json"
"""In the component images' folder: component -> image reference, as the manifests name
them."""

HOST_CAS = Path("/usr/local/share/ca-certificates")
BUILD_CAS = Path(__file__).resolve().parents[2] / "compose" / "ca-certificates"


@contextmanager
def host_cas_in_build_context() -> Iterator[None]:
    """The certificate authorities this machine trusts beyond Debian's (a TLS-inspecting
    proxy's, through which pip reaches PyPI) in compose/ca-certificates while the image is
    built, as the README asks a user behind such a proxy to put them; removed after."""
    copied = [Path(shutil.copy(ca, BUILD_CAS)) for ca in HOST_CAS.glob("*.crt")
              if not (BUILD_CAS / ca.name).exists()]
    try:
        yield
    finally:
        for ca in copied:
            ca.unlink()


def control_plane_files(certs: ClusterCertificates, node: str) -> tuple[Path, ...]:
    """What kubeadm leaves on its control-plane node and the static pods mount: etcd's
    certificates, the API server's, the CA's key (the controller-manager signs the
    kubelets' certificates with it), the controller-manager's and scheduler's
    kubeconfigs, the kubelet's kubelet.conf, the API server's tracing configuration."""
    etcd = certs.etcd_tls()
    tracing = tracing_config(certs.state)
    return (etcd.ca_file, etcd.cert_file, etcd.key_file, etcd.peer_cert_file,
            etcd.peer_key_file, Path(etcd.client.cert_file), Path(etcd.client.key_file),
            certs.file("ca.key"), certs.file("apiserver.crt"),
            certs.file("apiserver.key"), certs.file("apiserver-kubelet-client.crt"),
            certs.file("apiserver-kubelet-client.key"), certs.service_account_key,
            certs.file("apiserver-etcd-client.crt"), certs.file("apiserver-etcd-client.key"),
            certs.front_proxy().cert_file, certs.front_proxy().key_file,
            certs.kubeconfig("controller-manager"), certs.kubeconfig("scheduler"),
            certs.kubeconfig(node), *((tracing,) if tracing.exists() else ()))


def shares(certs: ClusterCertificates, nodes: Iterable[str],
           control_plane: str) -> dict[str, tuple[Path, ...]]:
    """Who may read which of the cluster's files: what its flags name, nothing more.
    Each node: the CA and its kubelet's serving certificate; the control-plane node also
    control_plane_files. "admin" is the init step's (and what a user copies out to run
    kubectl)."""
    return {
        "admin": (certs.kubeconfig("admin"),),
        **{node: (certs.ca_file, *certs.kubelet_serving(node),
                  *(control_plane_files(certs, node) if node == control_plane else ()))
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
        certs.ensure_node_kubeconfig(args.control_plane, args.server)
        if args.tracing_endpoint:
            tracing_config(certs.state).write_text(tracing_configuration(args.tracing_endpoint))
        print(f"wrote the cluster's certificates and kubeconfigs in {args.state}")
        for who, files in shares(certs, nodes, args.control_plane).items():
            copy_share(certs, files, args.shares / who)
            print(f"wrote {args.shares / who}: "
                  f"{', '.join(str(file.relative_to(certs.state)) for file in files)}")
    except (OSError, ValueError) as error:
        sys.exit(f"certs: {error}")


def read_references(images: Path) -> dict[str, str]:
    """The component images' references the component-images step wrote in `images`."""
    try:
        return json.loads((images / REFERENCES).read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read the component images' references in {images} "
                         f"({error}); the image's component-images step writes them"
                         ) from None


def init(args: argparse.Namespace) -> None:
    """kubeadm init's phases once its API server answers, as the admin of --kubeconfig
    (whose CA is the cluster's): upload-config and bootstrap-token (the token goes to
    --state, where the nodes read it), mark-control-plane, the add-ons (kube-proxy,
    DNS, the metrics server, the local-path provisioner) and the default StorageClass."""
    try:
        ca_file = load_kubeconfig(args.kubeconfig).ca_file
        if ca_file is None:
            raise KubeconfigError(f"{args.kubeconfig} names no certificate authority")
        addons = Addons(server=args.server, cluster_cidr=args.cluster_cidr,
                        cluster_dns=args.cluster_dns, images=read_references(args.images),
                        tracing_endpoint=args.tracing_endpoint)
        join = asyncio.run(_init(args, addons, Path(ca_file).read_bytes()))
        if args.kubeconfig_out:
            write_user_kubeconfig(args.kubeconfig, args.kubeconfig_out,
                                  args.kubeconfig_server or args.server)
    except (KubeconfigError, ClientError, OSError, ValueError) as error:
        sys.exit(f"init: {error}")
    print(f"wrote {token_file(args.state)}")
    print(f"nodes join with: {join.command()}")
    if args.kubeconfig_out:
        print(f"wrote {args.kubeconfig_out} (the admin's, for {args.kubeconfig_server})")


async def _init(args: argparse.Namespace, addons: Addons, ca_pem: bytes) -> JoinInfo:
    join = await publish_cluster_objects(args.kubeconfig, args.state, args.server, ca_pem)
    if args.trace_receiver_url:
        await publish_trace_receiver(args.kubeconfig, args.trace_receiver_url)
    await mark_control_plane(args.kubeconfig, args.control_plane)
    print(f"marked {args.control_plane} as the control plane")
    await apply_addons(args.kubeconfig, [
        *addon_objects(addons),
        *local_path_provisioner_objects(addons, args.nodes_dir, args.node)])
    await ensure_default_storage_class(args.kubeconfig)
    print("applied kube-proxy, coredns, metrics-server, local-path-provisioner and the "
          "default StorageClass")
    return join


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
        sys.exit(f"join: cannot read the bootstrap token ({error}); the init step "
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


def static_pods(args: argparse.Namespace) -> None:
    """kubeadm's etcd and control-plane phases: the four static pods' manifests into
    --manifest-dir, mounting the node's share of the pki (--cluster-dir) and etcd's data
    (--etcd-data) at kubeadm's paths."""
    try:
        plane = ControlPlane(advertise_address=args.advertise_address, ports=DEFAULT_PORTS,
                             images=read_references(args.images),
                             tracing_endpoint=args.tracing_endpoint,
                             load_balancer_range=args.load_balancer_range)
        certs = ClusterCertificates(args.cluster_dir)
        paths = HostPaths(pki=certs.pki, kubeconfigs=certs.kubeconfig("admin").parent,
                          etcd_data=args.etcd_data,
                          tracing_config=tracing_config(args.cluster_dir))
        for written in write_static_pods(args.manifest_dir, plane, paths):
            print(f"wrote {written}")
    except (OSError, ValueError) as error:
        sys.exit(f"static-pods: {error}")


def component_images(args: argparse.Namespace) -> None:
    """Build the component images into --output (an OCI image layout) and write their
    references beside them."""
    try:
        built = build_component_images(args.output)
    except (ComponentImageError, OSError) as error:
        sys.exit(f"component-images: {error}")
    (args.output / REFERENCES).write_text(json.dumps(built.references(), indent=2))
    for component, reference in built.references().items():
        print(f"{component}: {reference}")


def push_images(args: argparse.Namespace) -> None:
    """Push every shipped image archive in --images, and the component images in
    --component-images, to the registry, each under all its names."""
    try:
        for line in push_catalog(args.images, args.registry, rebuild=False):
            print(line)
        if args.component_images:
            for pushed in push_components(build_component_images(args.component_images),
                                          args.registry):
                print(f"pushed {pushed.reference}")
    except (PackageError, RegistryError, ArchiveError, ComponentImageError, OSError,
            ValueError) as error:
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
    certs.add_argument("--control-plane", required=True, metavar="NAME",
                       help="the control-plane node (one of --node): its kubelet.conf, and "
                            "the control plane's files in its share")
    certs.add_argument("--shares", type=Path, required=True,
                       help="each node's share goes to <shares>/<node>; the init step's "
                            "to <shares>/admin")
    certs.add_argument("--tracing-endpoint", default="", metavar="HOST:PORT",
                       help="write the API server's TracingConfiguration (tracing.yaml, in "
                            "its share) sending its spans to this OTLP receiver")
    certs.set_defaults(run=make_certificates)
    initing = steps.add_parser("init", help="once the API server runs: the rest of "
                               "kubeadm init (a bootstrap token, cluster-info, the "
                               "control-plane mark, the add-ons)")
    initing.add_argument("--kubeconfig", type=Path, required=True, help="the admin's")
    initing.add_argument("--state", type=Path, required=True,
                         help="the token goes to <state>/pki/bootstrap-token (a token still "
                              "good there is kept)")
    initing.add_argument("--server", required=True, metavar="URL",
                         help="the API server as the nodes and pods reach it, published in "
                              "cluster-info and the add-ons' kubeconfigs")
    initing.add_argument("--control-plane", required=True, metavar="NAME",
                         help="the node to label and taint as the control plane")
    initing.add_argument("--images", type=Path, required=True,
                         help="the component images' folder (component-images wrote it)")
    initing.add_argument("--cluster-cidr", required=True, help="the pods' CIDR, for kube-proxy")
    initing.add_argument("--cluster-dns", required=True, metavar="IP",
                         help="the kube-dns Service's ClusterIP")
    initing.add_argument("--tracing-endpoint", required=True, metavar="URL",
                         help="where the add-ons send their spans")
    initing.add_argument("--nodes-dir", type=Path, required=True,
                         help="the folder every node mounts at this path, where the "
                              "local-path provisioner makes each node's volumes")
    initing.add_argument("--node", action="append", default=[], metavar="NAME",
                         help="a node that mounts --nodes-dir (repeat it for more)")
    initing.add_argument("--trace-receiver-url", default="", metavar="URL",
                         help="publish the trace receiver's query URL, as users reach it, "
                              "for `mkctl trace` (kube-public/minikube-py-tracing)")
    initing.add_argument("--kubeconfig-out", type=Path, default=None, metavar="PATH",
                         help="also write the admin's kubeconfig here, for users")
    initing.add_argument("--kubeconfig-server", default="", metavar="URL",
                         help="the API server as users reach it, in --kubeconfig-out "
                              "(default: --server)")
    initing.set_defaults(run=init)
    joining = steps.add_parser("join", help="discover the cluster with a bootstrap token and "
                               "write the kubelet's bootstrap kubeconfig")
    joining.add_argument("--server", required=True, metavar="URL")
    joining.add_argument("--token-file", type=Path, required=True,
                         help="the bootstrap token (the init step writes it)")
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
    pods = steps.add_parser("static-pods", help="write the control plane's static pods")
    pods.add_argument("--manifest-dir", type=Path, required=True,
                      help="the kubelet's --pod-manifest-path")
    pods.add_argument("--advertise-address", required=True, type=ip_address, metavar="IP",
                      help="the control-plane node's address")
    pods.add_argument("--cluster-dir", type=Path, required=True,
                      help="the node's share of the pki (pki/, kubeconfigs/, tracing.yaml)")
    pods.add_argument("--etcd-data", type=Path, required=True, help="etcd's data folder")
    pods.add_argument("--images", type=Path, required=True,
                      help="the component images' folder (component-images wrote it)")
    pods.add_argument("--tracing-endpoint", required=True, metavar="URL",
                      help="where the controller-manager and scheduler send their spans")
    pods.add_argument("--load-balancer-range", required=True, metavar="FIRST-LAST",
                      help="addresses for LoadBalancer Services")
    pods.set_defaults(run=static_pods)
    built = steps.add_parser("component-images", help="build the component images")
    built.add_argument("--output", type=Path, required=True,
                       help="an OCI image layout folder; references.json beside it")
    built.set_defaults(run=component_images)
    images = steps.add_parser("push-images", help="push the shipped images and the "
                              "component images to the registry")
    images.add_argument("--registry", required=True, metavar="HOST:PORT")
    images.add_argument("--images", type=Path, required=True,
                        help="the archives `minikube-py image build --output` wrote")
    images.add_argument("--component-images", type=Path, default=None, metavar="DIR",
                        help="the component images' folder (component-images wrote it)")
    images.set_defaults(run=push_images)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
