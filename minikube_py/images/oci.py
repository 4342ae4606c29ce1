"""OCI images: filesystem layers, the image config and the manifest that names them, and
the image layout tar that holds one image.

The format is the OCI Image Layout (image-spec `image-layout.md`): a file `oci-layout`, an
`index.json` naming the image, and content-addressed blobs under `blobs/sha256/<hex>`, each
named by the sha256 of its bytes. `ctr images import` reads it, as do `docker load` and
`podman load`. Everything is written deterministically (fixed timestamps, sorted entries,
owner root), so building the same image twice gives the same digests.

    Layer  --tar-->  diff_id (sha256 of the tar)  -->  LayerBlob (digest, size)
    image_blobs(layers, config)  ->  the config (diff_ids in order) and the manifest

Layers ship as plain tars (`application/vnd.oci.image.layer.v1.tar`), not gzip'd: every
node's containerd unpacks every layer it pulls, and on this machine, where the registry is
a local process, inflating them cost more CPU than moving three times the bytes (see
docs/decisions.md, "Layers ship uncompressed"). A plain layer's digest is its diff_id.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import platform
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"
GZIP_LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
# The image's name in index.json: the OCI annotation, and containerd's own (which its
# importer reads first).
REF_NAME_ANNOTATION = "org.opencontainers.image.ref.name"
CONTAINERD_NAME_ANNOTATION = "io.containerd.image.name"
# gzip's fastest level, for a layer asked for compressed: Python's default (9) takes over
# ten times as long on the python image's 38 MB layer (18 s against 1.4 s here) for a
# blob only 10% smaller.
GZIP_LEVEL = 1
# A fixed creation time (like SOURCE_DATE_EPOCH=0): the same input gives the same digests.
EPOCH = "1970-01-01T00:00:00Z"
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Image configs name machines as Go does (GOARCH); platform.machine() as the kernel does.
GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "i686": "386"}


def host_architecture() -> str:
    """This machine's architecture as image configs spell it ("amd64", "arm64", ...)."""
    machine = platform.machine()
    return GOARCH.get(machine, machine)


@dataclass(frozen=True)
class ImageConfig:
    """The `config` section of an OCI image config: how a container runs by default.

    Entrypoint is what a pod's `command` replaces and Cmd what its `args` replace.
    exposed_ports are "8080/tcp"-style keys (documentation only, as upstream).
    """

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = (DEFAULT_PATH,)
    working_dir: str = "/"
    exposed_ports: tuple[str, ...] = ()
    user: str = ""

    def to_json(self) -> dict[str, Any]:
        """The section as image configs spell it (Go field names: Entrypoint, Cmd, ...)."""
        config: dict[str, Any] = {"Env": list(self.env), "WorkingDir": self.working_dir}
        if self.entrypoint:
            config["Entrypoint"] = list(self.entrypoint)
        if self.cmd:
            config["Cmd"] = list(self.cmd)
        if self.exposed_ports:
            config["ExposedPorts"] = {port: {} for port in self.exposed_ports}
        if self.user:
            config["User"] = self.user
        return config


class Layer:
    """A filesystem layer being assembled: directories, files and symlinks, as one tar.

    Paths are absolute inside the image ("/bin/sh"); missing parent directories are added
    (mode 0755). Every entry is owned by root with mtime 0. `sources` remembers the files
    and folders of this machine the layer was made from, so a cache can tell when to
    build it again (layers.py).
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[tarfile.TarInfo, bytes]] = {}
        self.sources: dict[str, tuple[int, int]] = {}

    def record_source(self, host_path: Path) -> None:
        """Remember a file or folder of this machine the layer was made from: its size and
        modification time (symlinks followed)."""
        stat = Path(host_path).stat()
        self.sources[str(host_path)] = (stat.st_size, stat.st_mtime_ns)

    def add_directory(self, path: str, mode: int = 0o755) -> None:
        """A directory, e.g. add_directory("/tmp", 0o1777)."""
        info = self._info(path, tarfile.DIRTYPE, mode)
        self._entries[info.name] = (info, b"")

    def add_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """A regular file with the given content and permission bits."""
        info = self._info(path, tarfile.REGTYPE, mode)
        info.size = len(data)
        self._entries[info.name] = (info, data)

    def add_symlink(self, path: str, target: str) -> None:
        """A symbolic link at path pointing to target (relative or absolute)."""
        info = self._info(path, tarfile.SYMTYPE, 0o777)
        info.linkname = target
        self._entries[info.name] = (info, b"")

    def _info(self, path: str, kind: bytes, mode: int) -> tarfile.TarInfo:
        name = PurePosixPath("/", path).relative_to("/")
        if not name.parts:
            raise ValueError(f"not a path inside the image: {path!r}")
        for parent in reversed(name.parents[:-1]):
            if str(parent) not in self._entries:
                self.add_directory(f"/{parent}")
        info = tarfile.TarInfo(str(name))
        info.type = kind
        info.mode = mode
        info.mtime = 0
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    def files(self) -> list[tuple[str, bytes]]:
        """The regular files, as (absolute path in the image, content), sorted by path."""
        return [(f"/{name}", data) for name, (info, data) in sorted(self._entries.items())
                if info.isfile()]

    def tar(self) -> bytes:
        """The layer as an uncompressed tar, parents before children (sorted by path)."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name in sorted(self._entries):
                info, data = self._entries[name]
                archive.addfile(info, io.BytesIO(data) if info.isfile() else None)
        return buffer.getvalue()


@dataclass(frozen=True)
class Blob:
    """A content-addressed blob: its bytes, and the descriptor naming it by digest."""

    media_type: str
    data: bytes

    @classmethod
    def of_json(cls, media_type: str, document: dict[str, Any]) -> Blob:
        """A JSON document as a blob (compact, sorted keys: stable digests)."""
        text = json.dumps(document, sort_keys=True, separators=(",", ":"))
        return cls(media_type, text.encode())

    @property
    def digest(self) -> str:
        """"sha256:<hex>" of the bytes."""
        return "sha256:" + hashlib.sha256(self.data).hexdigest()

    def descriptor(self, **extra: Any) -> dict[str, Any]:
        """The OCI descriptor that points at this blob (mediaType, digest, size, extras)."""
        return {"mediaType": self.media_type, "digest": self.digest, "size": len(self.data),
                **extra}


@dataclass(frozen=True)
class ImageArchive:
    """An image archive on disk: its file, its name, and the digests that identify it.

    config_digest is the image ID (what `crictl images` shows, shortened).
    """

    path: Path
    name: str
    manifest_digest: str
    config_digest: str


def check_image_name(name: str) -> None:
    """An archive's image needs a full name with a tag, e.g. "localhost/echo:1.0"."""
    repository, _, tag = name.rpartition(":")
    if not repository or not tag or "/" in tag or repository != repository.lower():
        raise ValueError(f"image name {name!r} must be a lower-case repository and a tag, "
                         "e.g. localhost/echo:1.0")


@dataclass(frozen=True)
class LayerBlob:
    """A layer as a manifest names it: the blob's digest and size, and the diff_id (the
    digest of the uncompressed tar) that the image config lists."""

    media_type: str
    digest: str
    size: int
    diff_id: str

    def descriptor(self) -> dict[str, Any]:
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size}


def layer_blob(layer_tar: bytes, *, compress: bool = False) -> tuple[LayerBlob, bytes]:
    """A layer's tar as a blob (the tar itself, or gzip-compressed if compress), and the
    bytes."""
    diff_id = "sha256:" + hashlib.sha256(layer_tar).hexdigest()
    if not compress:
        return LayerBlob(LAYER_MEDIA_TYPE, diff_id, len(layer_tar), diff_id), layer_tar
    data = gzip.compress(layer_tar, compresslevel=GZIP_LEVEL, mtime=0)
    blob = Blob(GZIP_LAYER_MEDIA_TYPE, data)
    return LayerBlob(blob.media_type, blob.digest, len(data), diff_id), data


def image_blobs(layers: list[LayerBlob], config: ImageConfig, architecture: str | None = None
                ) -> tuple[Blob, Blob]:
    """The image config (the layers' diff_ids, bottom first) and the manifest naming it and
    the layers."""
    arch = architecture or host_architecture()
    config_blob = Blob.of_json(CONFIG_MEDIA_TYPE, {
        "created": EPOCH,
        "architecture": arch,
        "os": "linux",
        "config": config.to_json(),
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [{"created": EPOCH, "created_by": "minikube-py image build"}
                    for _ in layers],
    })
    manifest_blob = Blob.of_json(MANIFEST_MEDIA_TYPE, {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": config_blob.descriptor(),
        "layers": [layer.descriptor() for layer in layers],
    })
    return config_blob, manifest_blob


def image_index(images: list[tuple[str, Blob]], architecture: str | None = None) -> Blob:
    """index.json of an image layout: each manifest with the name it goes by."""
    arch = architecture or host_architecture()
    return Blob.of_json(INDEX_MEDIA_TYPE, {
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "manifests": [manifest.descriptor(
            platform={"architecture": arch, "os": "linux"},
            annotations={REF_NAME_ANNOTATION: name, CONTAINERD_NAME_ANNOTATION: name},
        ) for name, manifest in images],
    })


def write_oci_archive(path: Path, name: str, layer: Layer, config: ImageConfig, *,
                      compress: bool = False, architecture: str | None = None) -> ImageArchive:
    """Write an image of one layer to path as an OCI image layout tar named `name`.

    The layer goes in as a plain tar, or gzip-compressed if compress. The file is written
    next to path and renamed into place, so a reader never sees half an archive.
    """
    check_image_name(name)
    layer_info, layer_data = layer_blob(layer.tar(), compress=compress)
    config_blob, manifest_blob = image_blobs([layer_info], config, architecture)
    index = image_index([(name, manifest_blob)], architecture)
    files = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": index.data,
        f"blobs/sha256/{layer_info.digest.removeprefix('sha256:')}": layer_data,
        **{f"blobs/sha256/{blob.digest.removeprefix('sha256:')}": blob.data
           for blob in (config_blob, manifest_blob)},
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    with tarfile.open(partial, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for directory in ("blobs", "blobs/sha256"):
            archive.addfile(_entry(directory, tarfile.DIRTYPE, 0o755, 0))
        for file_name, data in files.items():
            archive.addfile(_entry(file_name, tarfile.REGTYPE, 0o644, len(data)),
                            io.BytesIO(data))
    os.replace(partial, path)
    return ImageArchive(path=path, name=name, manifest_digest=manifest_blob.digest,
                        config_digest=config_blob.digest)


def _entry(name: str, kind: bytes, mode: int, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.mtime = kind, mode, size, 0
    return info
