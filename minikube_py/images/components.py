"""The control plane's own images: minikube-py's components in containers, as kubeadm runs
upstream's (static pods for etcd, the API server, the controller-manager and the scheduler,
a DaemonSet for kube-proxy, Deployments for DNS, the metrics server, the local-path
provisioner, the gateway controller and the dashboard add-on), each under upstream's
component name in the image repository localhost/minikube-py (see docs/decisions.md):

    localhost/minikube-py/<image>:<tag>   layers (bottom first)          runs
    kube-apiserver                        busybox python dependencies    minikube_py.apiserver
                                          apiserver-dependencies source
    kube-controller-manager               busybox python dependencies    minikube_py.controllers
    kube-scheduler                        source                         minikube_py.scheduler
    coredns                                                              minikube_py.dns
    metrics-server                                                       minikube_py.metrics
    local-path-provisioner                                               minikube_py.provisioner
    gateway-controller                                                   minikube_py.gateway
    dashboard                                                            minikube_py.dashboard
    kube-proxy                            ... dependencies proxy-tools   minikube_py.proxy
                                          source
    etcd  (tag: <etcd version>-<hash>)    busybox etcd                   etcd, etcdctl

    layer         holds                                                 built again when
    busybox       busybox-static and its applets, /etc/passwd           busybox-static changes
    python        Debian's python3.11 and its standard library          python3.11 or a library
                  (compiled), the libraries they link                   it links changes
    dependencies  pyproject.toml's dependencies and theirs, from the    the venv changes
                  venv's wheels (compiled; their ELF files stripped),   (`make deps`)
                  in dist-packages, but the API server's own:
    apiserver-    those only the API server imports (CEL, RE2, gRPC     the venv changes
    dependencies  for its etcd client, protobuf): 60 of the 100 MB,
                  which a node that runs no API server does not pull
    proxy-tools   iptables (nf_tables), nft, conntrack                  those packages change
    source        the package minikube_py with gen/ (compiled), its      any .py file changes
                  package data (the dashboard's page), and
                  /usr/local/bin/<component> for each component
    etcd          Debian's etcd and etcdctl                             etcd's packages change

The layers are ordered by how often they change, so a change to the code builds, stores
and pushes only the top one, and a kubelet pulls only that. The tag is upstream's version
with a hash of the layers (`v1.37.0-1a2b3c4d5e6f`), the same for all the components: it
changes with any layer, so kubelets pull the new images (IfNotPresent, as kubeadm's
static pods ask). A layer is rebuilt only when a file it was made from changed
(layers.py), so a build with nothing changed only stats files and writes nothing.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

import minikube_py
from minikube_py.images import programs
from minikube_py.images.bytecode import BytecodeError, add_bytecode
from minikube_py.images.catalog import busybox_layer
from minikube_py.images.debian import PackageError
from minikube_py.images.layers import LayerCache, write_atomically
from minikube_py.images.oci import (
    DEFAULT_PATH,
    MANIFEST_MEDIA_TYPE,
    Blob,
    ImageConfig,
    Layer,
    LayerBlob,
    image_blobs,
    image_index,
)
from minikube_py.images.registry import BlobFiles, Image, Pushed, push_image
from minikube_py.images.wheels import (
    DependencyError,
    installed_files,
    normalize,
    project_metadata_file,
    runtime_distributions,
)

IMAGE_REPOSITORY = "localhost/minikube-py"
"""Where the component images live (kubeadm's --image-repository; its own is
registry.k8s.io)."""
VERSION = "v1.37.0"
"""The Kubernetes version the API server reports (apiserver/server.py's GIT_VERSION)."""
SITE_PACKAGES = "/usr/local/lib/python3.11/dist-packages"
"""Where Debian's python3.11 finds packages pip installed, first of its sys.path folders."""
ENV = (DEFAULT_PATH, "LANG=C.UTF-8", "PYTHONUNBUFFERED=1")  # each log line at once
IMAGES_CODE = Path(__file__).parent


@dataclass(frozen=True)
class Component:
    """A component image: upstream's name for the component, and our module that is it."""

    name: str
    module: str
    proxy_tools: bool = False
    apiserver_dependencies: bool = False

    @property
    def command(self) -> str:
        """The program in the image that starts the component, upstream's binary name."""
        return f"/usr/local/bin/{self.name}"

    def script(self) -> str:
        return f'#!/bin/sh\nexec python3 -m {self.module} "$@"\n'


COMPONENTS = (
    Component("kube-apiserver", "minikube_py.apiserver", apiserver_dependencies=True),
    Component("kube-controller-manager", "minikube_py.controllers"),
    Component("kube-scheduler", "minikube_py.scheduler"),
    Component("kube-proxy", "minikube_py.proxy", proxy_tools=True),
    Component("coredns", "minikube_py.dns"),
    Component("metrics-server", "minikube_py.metrics"),
    Component("local-path-provisioner", "minikube_py.provisioner"),
    Component("gateway-controller", "minikube_py.gateway"),
    Component("dashboard", "minikube_py.dashboard"),
)
APISERVER_DEPENDENCIES = frozenset({"cel-expr-python", "google-re2", "grpcio",
                                    "grpcio-health-checking", "protobuf"})
"""The distributions only the API server imports (CEL for validation rules and admission
policies, RE2 for schemas' patterns, gRPC and protobuf for its etcd client and protobuf
bodies): the apiserver-dependencies layer, in its image alone (a test holds that no other
component's code imports them)."""
PACKAGE_DATA = ("dashboard/static",)
"""Folders of the package whose every file ships, not only its modules (pyproject.toml's
package-data)."""
ETCD = "etcd"


@dataclass(frozen=True)
class ComponentImage:
    """One built image: the component, the name it is pushed as, its blobs."""

    component: str
    reference: str
    manifest: Blob
    config: Blob
    layers: tuple[LayerBlob, ...]


@dataclass(frozen=True)
class ComponentImages:
    """Every component's image, and the layers this build had to make (none when
    nothing changed)."""

    images: tuple[ComponentImage, ...]
    built: tuple[str, ...]
    cache: LayerCache

    def references(self) -> dict[str, str]:
        """Component -> image reference: what a static pod's or DaemonSet's `image` says."""
        return {image.component: image.reference for image in self.images}


class ComponentImageError(Exception):
    """A component image could not be built (a program, a package or a dependency is
    missing here, or the image's Python could not compile a module)."""


def build_component_images(output: Path, package: Path | None = None) -> ComponentImages:
    """Build the layers that changed and write every component image's config and
    manifest in output, an OCI image layout folder (its index.json names them).

    `package` is the minikube_py folder to ship (default: the one running).
    """
    package = Path(package or Path(minikube_py.__file__).parent)
    if not (package / "gen" / "__init__.py").is_file():
        raise ComponentImageError(f"{package / 'gen'} is missing: generate it with "
                                  "`make proto` (tools/genproto.py)")
    try:
        return _build(LayerCache(output), package)
    except (BytecodeError, DependencyError, PackageError, programs.StripError,
            FileNotFoundError) as error:
        raise ComponentImageError(str(error)) from error


def _build(cache: LayerCache, package: Path) -> ComponentImages:
    """Every layer (built when it changed), then each image's config and manifest."""
    recipe = images_recipe()
    bytecode = cache.root / "bytecode"
    busybox = cache.layer("busybox", recipe, busybox_layer)
    python = cache.layer("python", recipe, lambda: _python_layer(bytecode / "python"))
    dependencies = cache.layer(
        "dependencies", f"{recipe} {sys.prefix}",
        lambda: _dependencies_layer(bytecode / "dependencies", apiserver=False))
    apiserver_dependencies = cache.layer(
        "apiserver-dependencies", f"{recipe} {sys.prefix}",
        lambda: _dependencies_layer(bytecode / "apiserver-dependencies", apiserver=True))
    tools = cache.layer("proxy-tools", recipe, _proxy_tools_layer)
    source = cache.layer("source", f"{recipe} {package}",
                         lambda: _source_layer(package, bytecode / "source"))
    etcd = cache.layer("etcd", recipe, _etcd_layer)

    tag = f"{VERSION}-" + _short_hash(
        [busybox, python, dependencies, apiserver_dependencies, tools, source])
    images = []
    for component in COMPONENTS:
        layers = [busybox, python, dependencies,
                  *([apiserver_dependencies] if component.apiserver_dependencies else []),
                  *([tools] if component.proxy_tools else []), source]
        config = ImageConfig(entrypoint=(component.command,), env=ENV)
        images.append(_image(cache, component.name, f"{component.name}:{tag}", layers, config))
    etcd_tag = f"{_etcd_version()}-{_short_hash([busybox, etcd])}"
    images.append(_image(cache, ETCD, f"{ETCD}:{etcd_tag}", [busybox, etcd],
                         ImageConfig(cmd=("etcd",))))
    _write_layout(cache, images)
    cache.prune({digest for image in images for digest in _digests(image)})
    return ComponentImages(tuple(images), tuple(cache.built), cache)


def push_component_images(images: ComponentImages, registry: str) -> list[Pushed]:
    """Push every image to `registry` (host:port); a blob goes up once, and the other
    repositories link it (a cross-repository mount)."""
    pushed = []
    first = ""
    for image in images.images:
        blobs = BlobFiles({digest: images.cache.blob_path(digest) for digest in _digests(image)
                           if digest != image.manifest.digest})
        result = push_image(Image(image.manifest.data, MANIFEST_MEDIA_TYPE, blobs,
                                  (image.reference,)), registry, image.reference,
                            mount_from=first)
        first = first or result.reference.repository
        pushed.append(result)
    return pushed


def component_image_cache() -> Path:
    """Where `up` builds the component images: one folder for all of this user's cluster
    homes, kept past `down --purge` as a container engine keeps its images past a
    cluster's deletion, so that a new home pushes what an earlier `up` built instead of
    building it again (about 10 s of CPU)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "minikube-py" / "component-images"


def build_and_push_component_images(output: Path, registry: str,
                                    only: Collection[str] | None = None) -> dict[str, str]:
    """For `up`: build what changed, push it (`only` those components' images, if given)
    to the cluster's registry, and give each pushed component's image reference
    ("kube-apiserver" -> "localhost/minikube-py/...").

    Two `up`s may share `output` (component_image_cache): the second waits on the
    folder's lock, then finds the layers built."""
    output.mkdir(parents=True, exist_ok=True)
    with open(output / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        images = build_component_images(output)
        if only is not None:
            images = replace(images, images=tuple(
                image for image in images.images if image.component in only))
        push_component_images(images, registry)
    return images.references()


def images_recipe() -> str:
    """How the images are built: a hash of this package's code (a change rebuilds them)."""
    digest = hashlib.sha256()
    for path in sorted(IMAGES_CODE.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _python_layer(bytecode: Path) -> Layer:
    layer = Layer()
    programs.python_files(layer)
    add_bytecode(layer, str(programs.PYTHON_LIB), bytecode)
    return layer


def _dependencies_layer(bytecode: Path, *, apiserver: bool) -> Layer:
    """pyproject's dependencies and theirs, as the venv has them (wheels.py): those of
    APISERVER_DEPENDENCIES (`apiserver`) or all the others."""
    if sys.version_info[:2] != (3, 11):
        raise ComponentImageError(
            f"this venv's Python is {sys.version_info[0]}.{sys.version_info[1]}: its wheels "
            "would not run on the images' python3.11 (Debian 12's); make the venv with "
            "python3.11")
    layer = Layer()
    layer.record_source(project_metadata_file())
    for distribution in runtime_distributions():
        if (normalize(distribution.name) in APISERVER_DEPENDENCIES) != apiserver:
            continue
        site_packages = Path(str(distribution.locate_file("")))
        for relative, path in installed_files(distribution):
            if programs.is_elf(path):
                programs.add_stripped_file(layer, f"{SITE_PACKAGES}/{relative}", path)
                programs.add_libraries(layer, path, bundled=site_packages)
            else:
                programs.add_host_file(layer, f"{SITE_PACKAGES}/{relative}", path)
    add_bytecode(layer, SITE_PACKAGES, bytecode)
    return layer


def _proxy_tools_layer() -> Layer:
    layer = Layer()
    programs.proxy_tools_files(layer)
    return layer


def _source_layer(package: Path, bytecode: Path) -> Layer:
    """The package's modules and package data (what a wheel of it holds), the modules
    compiled, and a command per component."""
    layer = Layer()
    target = f"{SITE_PACKAGES}/minikube_py"
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        layer.record_source(Path(folder))  # a module added or removed changes its mtime
        relative = Path(folder).relative_to(package)
        for name in sorted(files):
            if name.endswith(".py") or str(relative) in PACKAGE_DATA:
                programs.add_host_file(layer, f"{target}/{relative / name}",
                                       Path(folder) / name)
    for component in COMPONENTS:
        layer.add_file(component.command, component.script().encode(), 0o755)
    add_bytecode(layer, target, bytecode)
    return layer


def _etcd_layer() -> Layer:
    layer = Layer()
    programs.etcd_files(layer)
    return layer


def _etcd_version() -> str:
    """etcd's version, as `etcd --version` says it ("3.4.23")."""
    binary = next(iter(programs.ETCD_BINARIES))
    answer = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    match = re.search(r"etcd Version: (\S+)", answer.stdout)
    if match is None:
        raise ComponentImageError(f"{binary} --version did not say its version: "
                                  f"{(answer.stdout + answer.stderr).strip()[:200]}")
    return match.group(1)


def _short_hash(layers: list[LayerBlob]) -> str:
    """12 hex digits that change with any of the layers."""
    return hashlib.sha256(" ".join(layer.digest for layer in layers).encode()).hexdigest()[:12]


def _image(cache: LayerCache, component: str, name: str, layers: list[LayerBlob],
           config: ImageConfig) -> ComponentImage:
    config_blob, manifest = image_blobs(layers, config)
    for blob in (config_blob, manifest):
        cache.write_blob(blob.digest, blob.data)
    return ComponentImage(component, f"{IMAGE_REPOSITORY}/{name}", manifest, config_blob,
                          tuple(layers))


def _digests(image: ComponentImage) -> list[str]:
    """The image's blobs: config, layers, manifest."""
    return [image.config.digest, *(layer.digest for layer in image.layers),
            image.manifest.digest]


def _write_layout(cache: LayerCache, images: list[ComponentImage]) -> None:
    """oci-layout and index.json: the folder is an OCI image layout of every image."""
    index = image_index([(image.reference, image.manifest) for image in images])
    layout = cache.root / "oci-layout"
    if not layout.is_file():
        layout.write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
    index_path = cache.root / "index.json"
    if not index_path.is_file() or index_path.read_bytes() != index.data:
        write_atomically(index_path, index.data)
