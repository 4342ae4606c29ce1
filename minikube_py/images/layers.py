"""Layers built once and kept: a layer is built again only when something it was made of
changed, and built again from the same content it is the same blob, not written twice.

    <root>/layers/<name>.json   the layer's last build: its key, the files and folders of
                                this machine it was made from (size and mtime of each),
                                and its blob's descriptor
    <root>/blobs/sha256/<hex>   the layers' tars, uncompressed (oci.py says why), named
                                by their diff_id (the blob folder of an OCI image layout)

    LayerCache.layer(name, key, build):
        record's key == key, no source changed, its blob there   -> that blob (no build)
        else build() -> tar: record's diff_id, its blob there    -> that blob (no write)
                             else write the blob, write the record

The key says how the layer is built (the builder's code); the sources say from what. A
check of an unchanged layer costs one stat() per source, no read.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from minikube_py.images.oci import LAYER_MEDIA_TYPE, Layer, LayerBlob, layer_blob


class LayerCache:
    """The layers of a set of images, and their blobs, under one folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.blobs = self.root / "blobs" / "sha256"
        self.built: list[str] = []
        """The layers whose build ran, in order (the rest came from the cache)."""
        self.written: list[str] = []
        """The layers whose tar was new and written."""

    def blob_path(self, digest: str) -> Path:
        return self.blobs / digest.removeprefix("sha256:")

    def layer(self, name: str, key: str, build: Callable[[], Layer]) -> LayerBlob:
        """The layer `name`: from the cache when neither `key` nor a source changed, else
        built (and written only when its content is new)."""
        record_path = self.root / "layers" / f"{name}.json"
        record = _read_record(record_path)
        if record is not None and record.get("key") == key and self._fresh(record):
            return _blob_of(record)
        self.built.append(name)
        layer = build()
        tar = layer.tar()
        blob = _blob_of(record) if record is not None else None
        if (blob is None or blob.media_type != LAYER_MEDIA_TYPE
                or blob.diff_id != "sha256:" + hashlib.sha256(tar).hexdigest()
                or not self.blob_path(blob.digest).is_file()):
            self.written.append(name)
            blob, data = layer_blob(tar)
            write_atomically(self.blob_path(blob.digest), data)
        write_atomically(record_path, json.dumps({
            "key": key, "sources": layer.sources, "mediaType": blob.media_type,
            "digest": blob.digest, "size": blob.size, "diffID": blob.diff_id,
        }, sort_keys=True).encode())
        return blob

    def _fresh(self, record: dict[str, object]) -> bool:
        """The record's blob is there and none of its sources changed."""
        blob = _blob_of(record)
        if not self.blob_path(blob.digest).is_file():
            return False
        sources = record.get("sources")
        if not isinstance(sources, dict):
            return False
        for path, (size, mtime) in sources.items():
            try:
                stat = os.stat(path)
            except OSError:
                return False
            if stat.st_size != size or stat.st_mtime_ns != mtime:
                return False
        return True

    def write_blob(self, digest: str, data: bytes) -> None:
        """A config or manifest blob beside the layers' (written once)."""
        path = self.blob_path(digest)
        if not path.is_file():
            write_atomically(path, data)

    def prune(self, keep: set[str]) -> None:
        """Delete the blobs no image needs any longer (older builds of a layer)."""
        if self.blobs.is_dir():
            for path in self.blobs.iterdir():
                if path.is_file() and f"sha256:{path.name}" not in keep:
                    path.unlink()


def _read_record(path: Path) -> dict[str, object] | None:
    try:
        record = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _blob_of(record: dict[str, object]) -> LayerBlob:
    return LayerBlob(str(record.get("mediaType")), str(record.get("digest")),
                     int(str(record.get("size", 0))), str(record.get("diffID")))


def write_atomically(path: Path, data: bytes) -> None:
    """Write next to path and rename into place: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)
