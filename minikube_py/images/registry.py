"""Pushing image archives to a registry over the OCI distribution API.

    archive (OCI layout, or `docker save`) --> manifest, config, layers
    first:         HEAD /v2/<repo>/manifests/<tag>       (200 with our manifest's digest:
                                                          nothing to push)
    for each blob: HEAD /v2/<repo>/blobs/<digest>        (200: the registry has it)
                   POST /v2/<repo>/blobs/uploads/        (202, Location: an upload URL;
                        ?mount=<digest>&from=<other repo>  201: linked from there, no upload)
                   PUT  <Location>?digest=<digest>       (the bytes, in one piece: 201)
    then:          PUT  /v2/<repo>/manifests/<tag>       (the manifest: 201)

An image name maps to a repository as the nodes' containerd asks for it (hosts.toml points
docker.io, registry.k8s.io and localhost at this one registry): `nginx:1.14.2` is
docker.io/library/nginx:1.14.2 and goes to `library/nginx`, tag `1.14.2`;
`registry.k8s.io/pause:3.10` goes to `pause`; `localhost/echo:1.0` to `echo`.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minikube_py.images.oci import CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE


class ArchiveError(Exception):
    """The file is not an image archive we can read."""


class RegistryError(Exception):
    """The registry refused or did not answer."""


@dataclass(frozen=True)
class Reference:
    """An image name split as a registry sees it: host, repository, tag."""

    host: str
    repository: str
    tag: str

    @classmethod
    def parse(cls, name: str) -> Reference:
        """Normalise like containerd: `nginx` -> docker.io/library/nginx:latest."""
        remainder, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (
            name, "", "latest")
        first, _, rest = remainder.partition("/")
        if rest and ("." in first or ":" in first or first == "localhost"):
            host, path = first, rest
        else:
            host, path = "docker.io", remainder
        if host == "docker.io" and "/" not in path:
            path = f"library/{path}"
        if not path or not tag:
            raise ValueError(f"not an image name: {name!r}")
        return cls(host, path, tag)

    def __str__(self) -> str:
        return f"{self.host}/{self.repository}:{self.tag}"


@dataclass(frozen=True)
class Image:
    """What a push sends: the manifest and every blob it names, by digest."""

    manifest: bytes
    manifest_media_type: str
    blobs: Mapping[str, bytes]
    names: tuple[str, ...]


class BlobFiles(Mapping[str, bytes]):
    """Blobs on disk, by digest: a file is read only when a push has to send it."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self.paths = paths

    def __getitem__(self, digest: str) -> bytes:
        return self.paths[digest].read_bytes()

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)


@dataclass(frozen=True)
class Pushed:
    """What one push did: the blobs it sent, those it linked from another repository,
    and whether the registry had the manifest under that tag already (then nothing)."""

    reference: Reference
    uploaded: tuple[str, ...] = ()
    mounted: tuple[str, ...] = ()
    up_to_date: bool = False


def read_archive(path: Path) -> Image:
    """An OCI image layout tar, or the older `docker save` tar (manifest.json)."""
    try:
        with tarfile.open(path) as archive:
            members = {m.name.removeprefix("./"): m for m in archive.getmembers() if m.isfile()}

            def read(name: str) -> bytes:
                member = members.get(name.removeprefix("./"))
                extracted = archive.extractfile(member) if member is not None else None
                if extracted is None:
                    raise ArchiveError(f"{path}: the archive names {name}, which it lacks")
                return extracted.read()

            if "index.json" in members:
                return _oci_image(path, read)
            if "manifest.json" in members:
                return _docker_save_image(path, read)
    except (tarfile.TarError, OSError, EOFError) as error:
        raise ArchiveError(f"{path}: not an image archive ({error})") from None
    except (KeyError, TypeError, AttributeError) as error:
        raise ArchiveError(f"{path}: the image's manifest lacks {error}") from None
    raise ArchiveError(f"{path}: not an image archive (no index.json nor manifest.json: "
                       "write one with `docker save` or as an OCI image layout)")


def _json(data: bytes, what: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as error:
        raise ArchiveError(f"{what} is not JSON: {error}") from None


def _oci_image(path: Path, read: Any) -> Image:
    index = _json(read("index.json"), f"{path}: index.json")
    descriptors = [d for d in index.get("manifests") or [] if isinstance(d, dict)]
    if not descriptors:
        raise ArchiveError(f"{path}: index.json names no image")
    descriptor = descriptors[0]

    def blob(digest: str) -> bytes:
        return read("blobs/" + digest.replace(":", "/", 1))

    manifest_bytes = blob(descriptor["digest"])
    manifest = _json(manifest_bytes, f"{path}: the manifest")
    blobs = {d["digest"]: blob(d["digest"]) for d in [manifest["config"], *manifest["layers"]]}
    annotations = descriptor.get("annotations") or {}
    # containerd's annotation holds the full name; the OCI one is often only a tag.
    name = annotations.get("io.containerd.image.name") or ""
    ref_name = annotations.get("org.opencontainers.image.ref.name") or ""
    if not name and ("/" in ref_name or ":" in ref_name):
        name = ref_name
    media_type = descriptor.get("mediaType") or manifest.get("mediaType") or MANIFEST_MEDIA_TYPE
    return Image(manifest_bytes, media_type, blobs, (name,) if name else ())


def _docker_save_image(path: Path, read: Any) -> Image:
    """`docker save`'s manifest.json -> an OCI manifest over the same config and layers."""
    entries = _json(read("manifest.json"), f"{path}: manifest.json")
    if not isinstance(entries, list) or not entries or not isinstance(entries[0], dict):
        raise ArchiveError(f"{path}: manifest.json lists no image")
    entry = entries[0]
    config = read(entry["Config"])
    layers = [read(layer) for layer in entry.get("Layers") or []]
    blobs = {_digest(config): config, **{_digest(layer): layer for layer in layers}}
    manifest = {
        "schemaVersion": 2, "mediaType": MANIFEST_MEDIA_TYPE,
        "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": _digest(config),
                   "size": len(config)},
        "layers": [{"mediaType": LAYER_MEDIA_TYPE, "digest": _digest(layer),
                    "size": len(layer)} for layer in layers],
    }
    manifest_bytes = json.dumps(manifest, separators=(",", ":")).encode()
    return Image(manifest_bytes, MANIFEST_MEDIA_TYPE, blobs,
                 tuple(entry.get("RepoTags") or ()))


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def push(image: Image, registry: str, name: str) -> Reference:
    """Push `image` to `registry` (host:port, plain HTTP) under `name`."""
    return push_image(image, registry, name).reference


def push_image(image: Image, registry: str, name: str, *, mount_from: str = "") -> Pushed:
    """Push `image` under `name` and say what it took: nothing when the tag names this
    manifest already; blobs the repository lacks are linked from the repository
    `mount_from` of the same registry when it has them, else uploaded."""
    reference = Reference.parse(name)
    base = f"http://{registry}/v2/{reference.repository}"
    manifest_digest = _digest(image.manifest)
    status, headers = _request("HEAD", f"{base}/manifests/{reference.tag}", ok=(200, 404),
                               accept=image.manifest_media_type)
    if status == 200 and headers.get("Docker-Content-Digest") == manifest_digest:
        return Pushed(reference, up_to_date=True)
    uploaded, mounted = [], []
    for digest in image.blobs:
        if _request("HEAD", f"{base}/blobs/{digest}", ok=(200, 404))[0] == 200:
            continue
        uploads = f"{base}/blobs/uploads/"
        if mount_from and mount_from != reference.repository:
            uploads += (f"?mount={urllib.parse.quote(digest)}"
                        f"&from={urllib.parse.quote(mount_from)}")
        status, headers = _request("POST", uploads, ok=(201, 202))
        if status == 201:
            mounted.append(digest)
            continue
        location = urllib.parse.urljoin(f"http://{registry}/", headers.get("Location", ""))
        separator = "&" if "?" in location else "?"
        _request("PUT", f"{location}{separator}digest={urllib.parse.quote(digest)}",
                 image.blobs[digest], content_type="application/octet-stream", ok=(201,))
        uploaded.append(digest)
    _request("PUT", f"{base}/manifests/{reference.tag}", image.manifest,
             content_type=image.manifest_media_type, ok=(201,))
    return Pushed(reference, tuple(uploaded), tuple(mounted))


def registry_answers(registry: str) -> bool:
    """Whether a registry serves the distribution API at host:port (GET /v2/ is 200)."""
    try:
        return _request("GET", f"http://{registry}/v2/", ok=(200,), timeout=1)[0] == 200
    except RegistryError:
        return False


def _request(method: str, url: str, body: bytes | None = None, *, content_type: str = "",
             accept: str = "", ok: tuple[int, ...], timeout: float = 60) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, method=method)
    if content_type:
        request.add_header("Content-Type", content_type)
    if accept:
        request.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            status, headers = answer.status, answer.headers
    except urllib.error.HTTPError as error:
        status, headers = error.code, error.headers
        detail = error.read().decode(errors="replace")[:300]
        if status not in ok:
            raise RegistryError(f"{method} {url}: {status} {detail}") from None
    except (urllib.error.URLError, OSError) as error:
        raise RegistryError(f"{method} {url}: {error}") from None
    if status not in ok:
        raise RegistryError(f"{method} {url}: unexpected {status}")
    return status, headers
