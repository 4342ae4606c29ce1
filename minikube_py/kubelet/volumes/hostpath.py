"""hostPath volume: a file or directory of the node, checked against the volume's type.

Upstream: pkg/volume/hostpath/host_path.go. Nothing is mounted by the kubelet; the
container runtime bind-mounts the path. `type` asks for a check first:

    ""                 no check            Directory / File   must exist as such
    DirectoryOrCreate  mkdir -p (0755)     Socket, CharDevice, BlockDevice: must exist
    FileOrCreate       create empty (0644; the parent directory must exist)
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.kubelet.volumes.plugin import SetUpError

# Expected type -> (the file type hostutil.GetFileType reports, its description).
_EXPECTED = {
    "Directory": ("Directory", "directory"),
    "DirectoryOrCreate": ("Directory", "directory"),
    "File": ("File", "file"),
    "FileOrCreate": ("File", "file"),
    "Socket": ("Socket", "socket file"),
    "CharDevice": ("CharDevice", "character device"),
    "BlockDevice": ("BlockDevice", "block device"),
}


def file_type(path: str) -> str:
    """hostutil.GetFileType: Directory, File, Socket, CharDevice or BlockDevice."""
    mode = os.stat(path).st_mode
    for test, name in ((stat.S_ISDIR, "Directory"), (stat.S_ISREG, "File"),
                       (stat.S_ISSOCK, "Socket"), (stat.S_ISCHR, "CharDevice"),
                       (stat.S_ISBLK, "BlockDevice")):
        if test(mode):
            return name
    raise OSError("only recognise file, directory, socket, block device and character device")


def _create(operation: str, path: str, create: Callable[[], None]) -> None:
    """Run a create step; a failure reads like Go's "mkdir /p: permission denied"."""
    try:
        create()
    except OSError as error:
        reason = error.strerror or str(error)
        raise SetUpError(f"{operation} {path}: {reason[:1].lower()}{reason[1:]}") from error


def check_type(path: str, path_type: str) -> None:
    """checkType: create what the *OrCreate types ask for, then check the file type."""
    if path_type not in _EXPECTED:
        raise SetUpError(f"{path_type} is an invalid volume type")
    exists = os.path.exists(path)
    if path_type == "DirectoryOrCreate" and not exists:
        _create("mkdir", path, lambda: os.makedirs(path, mode=0o755, exist_ok=True))
        return
    if path_type == "FileOrCreate" and not exists:
        _create("open", path, lambda: os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)))
        return
    expected, description = _EXPECTED[path_type]
    if not exists:
        raise SetUpError(f"hostPath {path} doesn't exist")
    try:
        actual = file_type(path)
    except OSError as error:
        raise SetUpError(f"hostPath type check failed, {path} is not a {description}, "
                         f"unable to determine its type: {error}") from error
    if actual != expected:
        raise SetUpError(
            f"hostPath type check failed: {path} is not a {description}, it's a {actual}")


def set_up(source: Obj) -> Path:
    """SetUp: refuse '..' in the path, check the type; the path itself is the volume."""
    path = source["path"]
    if ".." in path.split("/"):
        raise SetUpError(f"invalid HostPath `{path}`: must not contain '..'")
    if source.get("type"):
        check_type(path, source["type"])
    return Path(path)
