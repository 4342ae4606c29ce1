"""The set-up steps of the Docker cluster (docker-compose.yml at the repository root).

The compose file runs the same components as `minikube-py up`, one service each, from
one image (Dockerfile). Two steps there need the project's own code rather than a
component's command line:

    node-N (compose/node.sh)   runtime-config: containerd's config.toml and the CNI
                               network of the node, as `up` writes them for its node
    images (once)              push-images: the shipped images (built into the image by
                               `minikube-py image build`) into the registry service,
                               where every node's containerd pulls them from

`python -m minikube_py.cluster.compose runtime-config --node-name N --pod-cidr C
--base-dir D [--registry HOST:PORT]` and `... push-images --registry HOST:PORT --images DIR`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from minikube_py.cluster.image_command import push_catalog
from minikube_py.images.debian import PackageError
from minikube_py.images.registry import ArchiveError, RegistryError
from minikube_py.kubelet.runtime_setup import (
    NodeRuntimeConfig,
    write_cni_config,
    write_containerd_config,
)


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.cluster.compose",
                                     description="set-up steps of docker-compose.yml")
    steps = parser.add_subparsers(dest="step", required=True)
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
