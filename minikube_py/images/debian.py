"""Real programs for images, from Debian's packages: the files of a package, and the shared
libraries a binary links.

An image holds only what it was given, so a dynamically linked program (nginx, python3)
needs its loader and every library `ldd` lists beside it, at the same paths as on this
machine. Packages that are not installed here (nginx) are downloaded as .deb files and
unpacked into a folder with `dpkg-deb -x`, never installed: nothing is started on this
machine and no maintainer script runs.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

LDD_LINE = re.compile(r"^\s*(?:\S+ => )?(/\S+) \(0x[0-9a-f]+\)$")


class PackageError(Exception):
    """A Debian package could not be fetched or unpacked."""


def unpack_packages(packages: list[str], cache: Path) -> Path:
    """Download (once) and unpack these packages into cache/root; the root."""
    cache.mkdir(parents=True, exist_ok=True)
    root = cache / "root"
    missing = [package for package in packages if not list(cache.glob(f"{package}_*.deb"))]
    if missing:
        _download(missing, cache)
    for package in packages:
        debs = sorted(cache.glob(f"{package}_*.deb"))
        if not debs:
            raise PackageError(f"apt-get download {package} left no .deb in {cache}")
        unpacked = subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(root)],
                                  capture_output=True, text=True)
        if unpacked.returncode != 0:
            raise PackageError(f"dpkg-deb -x {debs[-1].name}: {unpacked.stderr.strip()}")
    return root


def _download(packages: list[str], cache: Path) -> None:
    """One apt-get download for them all (one apt start-up and connection, not one per
    package: 18 packages took 53 s one by one here), after an apt-get update if the
    package lists do not know one."""
    for attempt in range(2):
        done = subprocess.run(["apt-get", "download", "-q", *packages], cwd=cache,
                              capture_output=True, text=True)
        if done.returncode == 0:
            return
        if attempt == 0:
            subprocess.run(["apt-get", "update", "-q"], capture_output=True)
    raise PackageError(f"apt-get download {' '.join(packages)} failed: "
                       f"{done.stderr.strip()[-300:]} (is a Debian package mirror reachable?)")


def shared_libraries(binary: Path) -> list[Path]:
    """The loader and every library `binary` links (ldd), as this machine's paths."""
    listed = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    if listed.returncode != 0:
        if "not a dynamic executable" in listed.stdout + listed.stderr:
            return []
        raise PackageError(f"ldd {binary}: {listed.stderr.strip()}")
    libraries = []
    for line in listed.stdout.splitlines():
        if "not found" in line:
            raise PackageError(f"{binary} needs a library this machine lacks: {line.strip()}")
        match = LDD_LINE.match(line)
        if match:
            libraries.append(Path(match.group(1)))
    return libraries


def is_elf(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(4) == b"\x7fELF"
