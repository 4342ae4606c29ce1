"""AtomicWriter: project a set of files into a volume so readers never see a half update.

Upstream: pkg/volume/util/atomic_writer.go. The layout of a configMap volume with keys
`a` and `b` and the writer's steps:

    <volume>/a                  -> ..data/a         user-visible files are symlinks
    <volume>/b                  -> ..data/b
    <volume>/..data             -> ..2026_11_22_04_00_00.123456789
    <volume>/..2026_11_22_04_00_00.123456789/{a,b}  the real files

    1. validate the payload paths       5. link ..data_tmp -> the new directory
    2. read ..data: the current dir      6. rename ..data_tmp to ..data (atomic)
    3. unchanged content: stop here      7. create the user-visible links
    4. write a fresh timestamped dir     8. remove links of dropped files, the old dir

A reader that opens `a` always resolves ..data to one complete directory, old or new.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

DATA_DIR = "..data"
NEW_DATA_DIR = "..data_tmp"
MAX_FILE_NAME_LENGTH = 255
MAX_PATH_LENGTH = 4096


@dataclass(frozen=True)
class FileProjection:
    """One file of a payload: its bytes and its permission bits."""

    data: bytes
    mode: int


class PayloadError(ValueError):
    """A payload path the writer refuses (absolute, with '..', too long)."""


def validate_path(path: str) -> None:
    """validatePath: relative, no '..' element, not starting with '..', within limits."""
    if not path:
        raise PayloadError(f'invalid path: must not be empty: "{path}"')
    if os.path.isabs(path):
        raise PayloadError(f"invalid path: must be relative path: {path}")
    if len(path) > MAX_PATH_LENGTH:
        raise PayloadError(
            f"invalid path: must be less than or equal to {MAX_PATH_LENGTH} characters")
    items = path.split("/")
    for item in items:
        if item == "..":
            raise PayloadError(f"invalid path: must not contain '..': {path}")
        if len(item) > MAX_FILE_NAME_LENGTH:
            raise PayloadError("invalid path: filenames must be less than or equal to "
                               f"{MAX_FILE_NAME_LENGTH} characters")
    if items[0].startswith("..") and len(items[0]) > 2:
        raise PayloadError(f"invalid path: must not start with '..': {path}")


class AtomicWriter:
    """Writes payloads into one target directory (which must exist); the caller keeps
    writes to the same directory from overlapping."""

    def __init__(self, target_dir: Path) -> None:
        self.target_dir = target_dir

    def write(self, payload: dict[str, FileProjection]) -> bool:
        """Project the payload; True if the files were rewritten, False if unchanged."""
        clean: dict[str, FileProjection] = {}
        for path, projection in payload.items():
            validate_path(path)
            clean[os.path.normpath(path)] = projection

        data_link = self.target_dir / DATA_DIR
        old_dir = os.readlink(data_link) if data_link.is_symlink() else None
        stale: set[str] = set()
        if old_dir is not None:
            stale = self._paths_to_remove(clean, self.target_dir / old_dir)
            if not stale and not self._content_differs(clean, self.target_dir / old_dir):
                self._create_user_visible_links(clean)
                return False

        new_dir = self._new_timestamped_dir()
        try:
            self._write_payload(clean, new_dir)
            staging_link = self.target_dir / NEW_DATA_DIR
            staging_link.unlink(missing_ok=True)
            staging_link.symlink_to(new_dir.name)
            os.replace(staging_link, data_link)
        except OSError:
            shutil.rmtree(new_dir, ignore_errors=True)
            raise
        self._create_user_visible_links(clean)
        for path in stale:
            if "/" not in path:
                (self.target_dir / path).unlink(missing_ok=True)
        if old_dir is not None:
            shutil.rmtree(self.target_dir / old_dir, ignore_errors=True)
        return True

    @staticmethod
    def _content_differs(payload: dict[str, FileProjection], old_dir: Path) -> bool:
        """shouldWritePayload: a file is new or its bytes changed."""
        for path, projection in payload.items():
            old_file = old_dir / path
            if not old_file.exists() or old_file.read_bytes() != projection.data:
                return True
        return False

    @staticmethod
    def _paths_to_remove(payload: dict[str, FileProjection], old_dir: Path) -> set[str]:
        """The paths of the current version that the new payload (or a parent directory
        of one of its files) no longer has."""
        current = {str(path.relative_to(old_dir)) for path in old_dir.rglob("*")}
        wanted = set()
        for path in payload:
            while path:
                wanted.add(path)
                path = os.path.dirname(path)
        return current - wanted

    def _new_timestamped_dir(self) -> Path:
        """A fresh `..<UTC time>.<random digits>` directory, mode 0755."""
        prefix = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())
        while True:
            candidate = self.target_dir / f"{prefix}{random.randrange(10**9):09d}"
            try:
                candidate.mkdir()
            except FileExistsError:
                continue
            candidate.chmod(0o755)
            return candidate

    @staticmethod
    def _write_payload(payload: dict[str, FileProjection], directory: Path) -> None:
        for path, projection in payload.items():
            target = directory / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(projection.data)
            target.chmod(projection.mode)  # the exact mode, whatever the umask

    def _create_user_visible_links(self, payload: dict[str, FileProjection]) -> None:
        """`name -> ..data/name` for the first element of every payload path."""
        for path in payload:
            top = path.split("/", 1)[0]
            link = self.target_dir / top
            if not link.is_symlink():
                link.symlink_to(f"{DATA_DIR}/{top}")
