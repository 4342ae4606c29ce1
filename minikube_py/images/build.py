"""`minikube-py image build | load`: write the shipped images, load archives into the nodes.

With no registry, images travel as files, as with `kind load image-archive` or
`minikube image load`: build (or `docker save`) an archive, then import it into the
containerd of every node (under $MINIKUBE_PY_HOME/nodes/<node>/containerd.sock), where
the kubelet's CRI finds it.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from functools import partial
from pathlib import Path

from minikube_py.images.catalog import build_catalog
from minikube_py.kubelet.runtime_setup import ImageLoadError, load_image, socket_answers


def node_sockets(home: Path, node: str | None = None) -> list[Path]:
    """The containerd sockets of the cluster's nodes (or of one node), running or not."""
    nodes = home / "nodes"
    if node is not None:
        socket = nodes / node / "containerd.sock"
        return [socket] if socket.exists() else []
    return sorted(nodes.glob("*/containerd.sock"))


async def load_into_nodes(archive: Path, sockets: list[Path]) -> dict[str, list[str]]:
    """Import archive into every containerd that answers; the image names, per node."""
    running = [socket for socket in sockets if await socket_answers(socket)]
    loaded = await asyncio.gather(*(load_image(socket, archive) for socket in running))
    return {socket.parent.name: names for socket, names in zip(running, loaded, strict=True)}


def build_command(args: argparse.Namespace, home: Callable[[], Path]) -> None:
    """`minikube-py image build [--output DIR]`."""
    output = args.output or home() / "images"
    for archive in build_catalog(output):
        print(f"built {archive.name}: {archive.path}")


def load_command(args: argparse.Namespace, home: Callable[[], Path]) -> None:
    """`minikube-py image load FILE.tar [--node NAME]`."""
    archive: Path = args.archive
    if not archive.is_file():
        raise SystemExit(f"error: no such file: {archive}")
    sockets = node_sockets(home(), args.node)
    try:
        loaded = asyncio.run(load_into_nodes(archive, sockets))
    except ImageLoadError as error:
        raise SystemExit(f"error: {error}") from None
    if not loaded and args.node:
        raise SystemExit(f"error: node {args.node} has no running containerd (at "
                         f"{home() / 'nodes' / args.node / 'containerd.sock'}); start it first")
    if not loaded:
        raise SystemExit(f"error: no node has a running containerd under {home() / 'nodes'}; "
                         "start the cluster first (`minikube-py up`)")
    for node, names in loaded.items():
        print(f"loaded {', '.join(names) or archive.name} into node {node}")


def add_image_command(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                      home: Callable[[], Path]) -> None:
    """Add `image build` and `image load` to the minikube-py command line."""
    image = commands.add_parser("image", help="build images, or load them into the nodes")
    actions = image.add_subparsers(dest="image_command", required=True)
    build = actions.add_parser(
        "build", help="write the shipped images (pause, busybox, echo) as OCI archives")
    build.add_argument("--output", type=Path, default=None,
                       help="directory for the archives (default: $MINIKUBE_PY_HOME/images)")
    build.set_defaults(run=partial(build_command, home=home))
    load = actions.add_parser("load", help="import an image archive into the nodes' containerd")
    load.add_argument("archive", type=Path, help="an OCI archive or a `docker save` tar")
    load.add_argument("--node", default=None, help="only this node (default: every node)")
    load.set_defaults(run=partial(load_command, home=home))
