"""The cluster's image registry: Debian's `docker-registry` (the CNCF distribution registry).

Every node's containerd pulls docker.io, registry.k8s.io and localhost images from it
(cluster/runtime_setup.py writes the hosts.toml files), and `minikube-py image build` and
`image load` push to it, so `kubectl create deployment web --image=nginx` is a real pull.
Its storage is a folder under the cluster's state; it listens on plain HTTP.

A new cluster's registry starts from a seed (StorageSeed): a copy of the storage of the
last new registry that `up` filled, kept in this user's cache past `down --purge`. The
pushes then find the blobs and tags there and send nothing but their checks, where
filling an empty registry costs about 3 CPU-seconds and as many seconds of `up`
(docs/decisions.md, "A new registry starts from a seed").
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from minikube_py.images.components import component_image_cache
from minikube_py.images.registry import registry_answers
from minikube_py.process import LOOPBACK, ComponentProcess, ComponentProcessError

REGISTRY_BINARY = "docker-registry"
CONFIG = """\
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {storage}
  delete:
    enabled: true
http:
  addr: {address}
"""


class RegistryProcessError(ComponentProcessError):
    """The registry could not start."""


class RegistryProcess(ComponentProcess):
    """`async with RegistryProcess(state_dir, port=5000):` a registry on address:port."""

    component = "registry"
    error = RegistryProcessError

    def __init__(self, state_dir: Path, *, port: int, address: str = LOOPBACK,
                 log_path: Path | None = None, pid_file: Path | None = None,
                 seed: StorageSeed | None = None) -> None:
        self.state_dir = Path(state_dir)
        super().__init__(log_path or self.state_dir / "registry.log", start_timeout=15.0,
                         stop_timeout=10.0, pid_file=pid_file, address=address)
        self.port = port
        self.seed = seed
        # set by a start on an empty storage: the blobs the seed gave it (None: no seed)
        self.new_storage = False
        self.seeded_blobs: set[str] | None = None

    @property
    def storage(self) -> Path:
        return self.state_dir / "storage"

    @property
    def host(self) -> str:
        """host:port, as image names and hosts.toml spell it."""
        return f"{self.address}:{self.port}"

    def command(self) -> list[str]:
        return [REGISTRY_BINARY, "serve", str(self.state_dir / "config.yml")]

    def ports(self) -> list[int]:
        return [self.port]

    def prepare(self) -> None:
        """The binary is installed, the port is free, the config and storage exist."""
        if shutil.which(REGISTRY_BINARY) is None:
            raise RegistryProcessError("docker-registry is not installed: apt-get install "
                                       "docker-registry")
        storage = self.storage
        storage.mkdir(parents=True, exist_ok=True)
        self.new_storage = not any(storage.iterdir())
        if self.new_storage and self.seed is not None:
            self.seeded_blobs = self.seed.fill(storage)
        (self.state_dir / "config.yml").write_text(
            CONFIG.format(storage=storage, address=self.host))
        super().prepare()

    def keep_seed(self) -> None:
        """After the pushes of the `up` that started this registry on an empty storage:
        keep its storage as the seed if it had none, or drop a seed that lacked blobs
        the pushes then uploaded (the images changed), so that the next new registry
        fills from nothing and keeps a seed of the images as they are now."""
        if self.seed is None or not self.new_storage:
            return
        if self.seeded_blobs is None:
            self.seed.keep(self.storage)
        elif blobs(self.storage) - self.seeded_blobs:
            self.seed.drop()

    async def serving(self) -> bool:
        """GET /v2/ answers 200."""
        return await asyncio.to_thread(registry_answers, self.host)


BLOBS = Path("docker/registry/v2/blobs/sha256")  # the filesystem driver's layout


def blobs(storage: Path) -> set[str]:
    """The digests of the blobs a registry's storage holds (blobs/sha256/ab/abc.../data)."""
    return {entry.name for prefix in (storage / BLOBS).glob("*") for entry in prefix.iterdir()}


class StorageSeed:
    """A registry storage folder to start new registries from: what the pushes of an
    earlier `up` left in one. A blob's `data` is never written again once in place (an
    upload is written elsewhere and renamed there), so new storages link it where the
    file system allows; the small link files, which a push of a tag rewrites in place,
    are copied. The folder appears whole (renamed into place) and is removed by renaming
    it away first, so a reader sees it whole or fails and starts empty."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def fill(self, storage: Path) -> set[str] | None:
        """Copy the seed into the empty `storage`; the blobs it gave, or None (and
        `storage` left empty) when there is no seed or it went away while copied."""
        if not self.folder.is_dir():
            return None
        try:
            for folder, _, files in os.walk(self.folder):
                target = storage / Path(folder).relative_to(self.folder)
                target.mkdir(exist_ok=True)
                for name in files:
                    _link_or_copy(Path(folder, name), target / name, link=name == "data")
        except OSError:
            for entry in storage.iterdir():
                shutil.rmtree(entry, ignore_errors=True)
            return None
        return blobs(storage)

    def keep(self, storage: Path) -> None:
        """Make a copy of `storage` the seed, unless one is there already."""
        if self.folder.exists():
            return
        partial = self.folder.with_name(f".{self.folder.name}-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        try:
            self.folder.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(storage, partial)
            partial.rename(self.folder)
        except OSError:  # another `up` kept one first, or the cache cannot hold it: no seed
            pass
        finally:
            shutil.rmtree(partial, ignore_errors=True)

    def drop(self) -> None:
        removed = self.folder.with_name(f".{self.folder.name}-removed-{os.getpid()}")
        try:
            self.folder.rename(removed)
        except OSError:  # gone already
            return
        shutil.rmtree(removed, ignore_errors=True)


def _link_or_copy(source: Path, target: Path, *, link: bool) -> None:
    if link:
        try:
            os.link(source, target)
            return
        except OSError:  # another file system
            pass
    shutil.copyfile(source, target)


def registry_seed() -> StorageSeed:
    """The seed `up` fills new registries from: beside the component images, in this
    user's cache (component_image_cache)."""
    return StorageSeed(component_image_cache().parent / "registry-seed")
