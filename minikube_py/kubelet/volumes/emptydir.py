"""emptyDir: a scratch directory that lives as long as the pod, on disk or in memory.

Upstream: pkg/volume/emptydir/empty_dir.go. `medium: ""` is a plain directory (mode
0777) under the pod's volumes; `medium: Memory` mounts a tmpfs there, sized by the node's
allocatable memory, the pod's memory limit or the volume's sizeLimit, whichever is
smallest. Secret and projected volumes sit on such a tmpfs too, so their content never
touches the disk. TearDown unmounts the tmpfs before the directory is removed.

What a volume holds is measured as `du` does (MetricsDu): the blocks of every file
below it, each inode once, on the volume's own file system; the eviction manager
evicts a pod whose emptyDir holds more than its sizeLimit.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.api.quantity import memory_bytes
from minikube_py.kubelet.resources import pod_memory_limit
from minikube_py.kubelet.volumes.plugin import SetUpError

EMPTY_DIR_MODE = 0o777
MOUNTINFO = Path("/proc/self/mountinfo")
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


def memory_medium_size(pod: Obj, size_limit: str | None,
                       allocatable_memory: int | None) -> int | None:
    """calculateEmptyDirMemorySize: the node's allocatable memory, lowered to the pod's
    memory limit and then to the volume's sizeLimit when those are smaller; None leaves
    the kernel's default (half the RAM)."""
    size = allocatable_memory
    for candidate in (pod_memory_limit(pod), memory_bytes(size_limit) if size_limit else None):
        if candidate and (size is None or candidate <= size):
            size = candidate
    return size


def setup_dir(path: Path) -> None:
    """setupDir: create the directory with mode 0777, whatever the umask."""
    path.mkdir(parents=True, exist_ok=True)
    if path.stat().st_mode & 0o7777 != EMPTY_DIR_MODE:
        path.chmod(EMPTY_DIR_MODE)


async def setup_tmpfs(path: Path, size: int | None) -> None:
    """setupTmpfs: mount a tmpfs on the directory, unless one is mounted already."""
    setup_dir(path)
    if os.path.ismount(path):
        return
    arguments = ["-t", "tmpfs", *(["-o", f"size={size}"] if size else []), "tmpfs", str(path)]
    returncode, output = await _run("mount", *arguments)
    if returncode != 0:
        raise SetUpError(f"mount failed: exit status {returncode}\nMounting command: mount\n"
                         f"Mounting arguments: {' '.join(arguments)}\nOutput: {output}")


async def set_up(path: Path, source: Obj, *, pod: Obj, allocatable_memory: int | None) -> None:
    """SetUp of an emptyDir volume at `path`."""
    medium = source.get("medium", "")
    if medium == "Memory":
        await setup_tmpfs(path, memory_medium_size(pod, source.get("sizeLimit"),
                                                   allocatable_memory))
    elif medium == "":
        setup_dir(path)
    else:
        raise SetUpError(f'unknown storage medium "{medium}"')


def disk_usage(path: Path) -> int:
    """du -s -x -B 1: the bytes of the blocks used below `path`, hard links once."""
    root = os.lstat(path)
    seen: set[int] = set()
    total = 0
    for directory, names, files in os.walk(path):
        for name in [*names, *files]:
            try:
                info = os.lstat(os.path.join(directory, name))
            except FileNotFoundError:
                continue  # removed while we walked
            if info.st_dev != root.st_dev or info.st_ino in seen:
                if name in names:
                    names.remove(name)  # another file system below: not ours to count
                continue
            seen.add(info.st_ino)
            total += info.st_blocks * 512
    return total + root.st_blocks * 512


def mount_points_under(path: Path) -> list[Path]:
    """The mount points at or below `path`, deepest first (from /proc/self/mountinfo)."""
    root = os.path.realpath(path)
    found = []
    for line in MOUNTINFO.read_text().splitlines():
        mount_point = _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), line.split(" ")[4])
        if mount_point == root or mount_point.startswith(root + "/"):
            found.append(Path(mount_point))
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


async def unmount_all_under(path: Path) -> None:
    """TearDown's unmount: every mount at or below `path`, deepest first."""
    for mount_point in mount_points_under(path):
        returncode, output = await _run("umount", str(mount_point))
        if returncode != 0:
            raise OSError(f"unmount failed: exit status {returncode}\n"
                          f"Unmounting arguments: {mount_point}\nOutput: {output}")


async def _run(*command: str) -> tuple[int, str]:
    """Run mount or umount: the exit status and the combined output."""
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output, _ = await process.communicate()
    return process.returncode or 0, output.decode(errors="replace").strip()
