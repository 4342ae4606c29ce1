"""`minikube-py image build | load`: write the shipped images, push them, load archives.

`build` writes every shipped image as an OCI archive and, when the cluster runs, pushes it
to the cluster's registry under each of its names (busybox:1.36, busybox:latest, ...), where
every node's containerd pulls it from. `build NAME ...` builds only those images, which
is also how the images `up` leaves out (ON_DEMAND in the catalog) are built.
`build --components` builds the control plane's own images (images/components.py:
localhost/minikube-py/kube-apiserver, ..., etcd) where anything changed, and pushes them.
`load FILE.tar` takes any OCI or `docker save` archive, as `kind load image-archive`
does: it pushes it to the registry and imports it into the containerd of every node
(under $MINIKUBE_PY_HOME/nodes/<node>/containerd.sock).
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path

from minikube_py.cluster.netns import ClusterNetwork
from minikube_py.cluster.runtime_setup import ImageLoadError, load_image, socket_answers
from minikube_py.images.catalog import CATALOG, ON_DEMAND, ImageSpec, build_image
from minikube_py.images.components import (
    ComponentImageError,
    build_component_images,
    component_image_cache,
    images_recipe,
    push_component_images,
)
from minikube_py.images.debian import PackageError
from minikube_py.images.registry import (
    ArchiveError,
    RegistryError,
    push,
    read_archive,
    registry_answers,
)


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


def push_catalog(output: Path, registry: str | None, *, rebuild: bool,
                 specs: tuple[ImageSpec, ...] = CATALOG) -> list[str]:
    """Build shipped images (or reuse their archives unless `rebuild`) and push each to
    `registry` under all its names; one line per image for the user."""
    lines = []
    for spec in specs:
        archive = output / spec.archive_name
        if rebuild or not archive.is_file():
            archive = build_image(spec, output).path
        line = f"built {spec.name}: {archive}"
        if registry is not None:
            image = read_archive(archive)
            for name in spec.names:
                push(image, registry, name)
            line += f" (pushed to {registry} as {', '.join(spec.names)})"
        lines.append(line)
    return lines


def shipped_image_cache() -> Path:
    """Where `up` keeps the shipped images' archives: beside the component images
    (component_image_cache), one folder for all of this user's cluster homes, kept past
    `down --purge`, so that a new home pushes them instead of building them again (and
    downloading nginx's and python's packages again). The folder is named by the images
    code's hash: a change to that code builds them afresh."""
    return component_image_cache().parent / "shipped-images" / images_recipe()[:16]


def push_shipped_images(registry: str, specs: tuple[ImageSpec, ...] = CATALOG) -> list[str]:
    """For `up`: push the shipped images from shipped_image_cache, building those not
    there yet. Two `up`s (the test lanes) take the cache's lock in turn; the folders of
    older code are removed."""
    cache = shipped_image_cache()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for folder in cache.parent.iterdir():
            if folder.is_dir() and folder != cache:
                shutil.rmtree(folder, ignore_errors=True)
        return push_catalog(cache, registry, rebuild=False, specs=specs)


def running_registry(home: Path) -> str | None:
    """host:port of the cluster's registry if it answers: its port is in cluster.json, and
    it listens on the node network's gateway when the cluster has one, else on loopback."""
    saved = home / "cluster.json"
    try:
        cluster = json.loads(saved.read_text())
        port = cluster["ports"]["registry"]
        network = cluster.get("network")
        host = (ClusterNetwork(network["prefix"], network["nodeNetwork"]).gateway
                if network and "podCIDRs" in cluster else "127.0.0.1")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    registry = f"{host}:{port}"
    return registry if registry_answers(registry) else None


def chosen_images(names: list[str]) -> tuple[ImageSpec, ...]:
    """The images named (by any of their names, "nginx:latest" or
    "docker.io/library/nginx:latest"), or the catalog when none is."""
    if not names:
        return CATALOG
    known = {}
    for spec in CATALOG + ON_DEMAND:
        for name in spec.names:
            known[name] = spec
            if name.startswith("docker.io/library/"):
                known[name.removeprefix("docker.io/library/")] = spec
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"error: no shipped image named {', '.join(unknown)}; the images: "
                         + ", ".join(spec.name for spec in CATALOG + ON_DEMAND))
    chosen: list[ImageSpec] = []
    for name in names:
        if known[name] not in chosen:
            chosen.append(known[name])
    return tuple(chosen)


def push_components(output: Path, registry: str | None) -> list[str]:
    """Build the component images (the layers that changed) and push them to `registry`;
    one line per image for the user, and one saying which layers were built."""
    images = build_component_images(output)
    pushed = push_component_images(images, registry) if registry is not None else []
    lines = []
    for image in images.images:
        line = f"built {image.reference}"
        for result in pushed:
            if str(result.reference) == image.reference:
                size = sum(layer.size for layer in image.layers
                           if layer.digest in result.uploaded)
                line += (f" (already in {registry})" if result.up_to_date else
                         f" (pushed to {registry}, {size / 1e6:.1f} MB sent)")
        lines.append(line)
    lines.append("layers built: " + (", ".join(images.built) or "none (nothing changed)"))
    return lines


def build_command(args: argparse.Namespace, home: Callable[[], Path]) -> None:
    """`minikube-py image build [NAME ... | --components] [--output DIR]
    [--registry HOST:PORT]`."""
    output = args.output or home() / "images"
    if args.components:
        if args.names:
            raise SystemExit("error: name shipped images or give --components, not both")
        registry = args.registry or running_registry(home())
        try:
            lines = push_components(output / "components", registry)
        except (ComponentImageError, RegistryError) as error:
            raise SystemExit(f"error: {error}") from None
        print("\n".join(lines))
        if registry is None:
            print("no cluster registry answers: the images were not pushed")
        return
    specs = chosen_images(args.names)
    registry = args.registry or running_registry(home())
    try:
        for line in push_catalog(output, registry, rebuild=True, specs=specs):
            print(line)
    except (PackageError, RegistryError, ArchiveError, FileNotFoundError, ValueError) as error:
        raise SystemExit(f"error: {error}") from None
    if registry is None:
        print("no cluster registry answers: the archives were not pushed "
              "(`minikube-py up` pushes them)")


def load_command(args: argparse.Namespace, home: Callable[[], Path]) -> None:
    """`minikube-py image load FILE.tar [--node NAME]`."""
    archive: Path = args.archive
    if not archive.is_file():
        raise SystemExit(f"error: no such file: {archive}")
    try:
        image = read_archive(archive)
    except ArchiveError as error:
        raise SystemExit(f"error: {error}") from None
    registry = running_registry(home())
    if registry is not None and image.names:
        try:
            for name in image.names:
                print(f"pushed {push(image, registry, name)} to {registry}")
        except (RegistryError, ValueError) as error:
            raise SystemExit(f"error: {error}") from None
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
        "build", help="write the shipped images as OCI archives and push them to the "
                      "cluster's registry")
    build.add_argument("names", nargs="*", metavar="NAME",
                       help="only these images (default: the ones `up` builds); "
                            + ", ".join(spec.name for spec in ON_DEMAND)
                            + " is built only when named")
    build.add_argument("--components", action="store_true",
                       help="build the control plane's images instead (kube-apiserver, "
                            "kube-controller-manager, kube-scheduler, kube-proxy, coredns, "
                            "metrics-server, etcd, in localhost/minikube-py/), in "
                            "OUTPUT/components; only what changed is built and pushed")
    build.add_argument("--output", type=Path, default=None,
                       help="directory for the archives (default: $MINIKUBE_PY_HOME/images)")
    build.add_argument("--registry", default=None, metavar="HOST:PORT",
                       help="push to this registry (default: the running cluster's)")
    build.set_defaults(run=partial(build_command, home=home))
    load = actions.add_parser("load", help="push an image archive to the cluster's registry "
                                           "and import it into the nodes' containerd")
    load.add_argument("archive", type=Path, help="an OCI archive or a `docker save` tar")
    load.add_argument("--node", default=None, help="only this node (default: every node)")
    load.set_defaults(run=partial(load_command, home=home))
