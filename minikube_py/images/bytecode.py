"""Bytecode for the images' Python, compiled once here: the __pycache__/*.pyc files Python
would otherwise compile inside every new container, at every start, before it runs a line.

    each .py of the layer  --key: sha256(path in the image, source)-->  cache/<key>.pyc
        (the missing ones: one run of the image's python3.11 compiles them all)
    --> <folder>/__pycache__/<module>.cpython-311.pyc, beside the .py in the layer

The .pyc files are hash-based and checked (PEP 552): Python uses one when the hash of the
source beside it matches, whatever the files' times. (A layer's times are all 0, which
would make Python's usual, time-stamped .pyc look stale.) They are compiled by the image's
own interpreter, Debian's python3.11, which need not be the one running this code.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from pathlib import Path, PurePosixPath

from minikube_py.images.oci import Layer

IMAGE_PYTHON = Path("/usr/bin/python3.11")
CACHE_TAG = "cpython-311"  # sys.implementation.cache_tag of the image's Python
# Run by the image's python3.11 (-I: neither PYTHONPATH nor the user's site-packages).
COMPILE = """\
import json, py_compile, sys
for source, image_path, target in json.load(sys.stdin):
    try:
        py_compile.compile(source, cfile=target, dfile=image_path, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    except py_compile.PyCompileError as error:
        print(error.msg, file=sys.stderr)
"""


class BytecodeError(Exception):
    """The image's Python could not compile the layer's modules."""


def pyc_path(module: str) -> str:
    """Where Python looks for a module's bytecode: /a/b.py -> /a/__pycache__/b.cpython-311.pyc."""
    path = PurePosixPath(module)
    return str(path.parent / "__pycache__" / f"{path.stem}.{CACHE_TAG}.pyc")


def add_bytecode(layer: Layer, under: str, cache: Path) -> None:
    """Add a checked .pyc beside every .py under the folder `under` of the layer.

    `cache` keeps the compiled files by key, so a layer built again compiles only the
    modules that changed; files the layer no longer needs are removed from it. A module
    that is not valid Python 3.11 (a template, a test for another version) gets none,
    as pip's install leaves it.
    """
    cache.mkdir(parents=True, exist_ok=True)
    sources = {path: source for path, source in layer.files()
               if path.startswith(f"{under.rstrip('/')}/") and path.endswith(".py")}
    modules = {path: _key(path, source) for path, source in sources.items()}
    missing = {path: key for path, key in modules.items()
               if not (cache / f"{key}.pyc").exists() and not (cache / f"{key}.none").exists()}
    if missing:
        _compile({path: (sources[path], key) for path, key in missing.items()}, cache)
    for path, key in modules.items():
        pyc = cache / f"{key}.pyc"
        if pyc.exists():
            layer.add_file(pyc_path(path), pyc.read_bytes())
    used = set(modules.values())
    for entry in cache.iterdir():
        if entry.is_file() and entry.stem not in used:
            entry.unlink()


def _key(path: str, source: bytes) -> str:
    return hashlib.sha256(path.encode() + b"\0" + source).hexdigest()


def _compile(modules: dict[str, tuple[bytes, str]], cache: Path) -> None:
    """Compile the modules (image path -> source, key) into cache/<key>.pyc with the image's
    python3.11; a module it refuses is remembered as cache/<key>.none."""
    if not IMAGE_PYTHON.is_file():
        raise BytecodeError(f"{IMAGE_PYTHON} is missing: apt-get install python3.11")
    with tempfile.TemporaryDirectory(prefix="bytecode-", dir=cache) as scratch:
        jobs = []
        for path, (source, key) in modules.items():
            source_file = Path(scratch) / f"{key}.py"
            source_file.write_bytes(source)
            jobs.append((str(source_file), path, str(Path(scratch) / f"{key}.pyc")))
        done = subprocess.run([str(IMAGE_PYTHON), "-I", "-c", COMPILE],
                              input=json.dumps(jobs), capture_output=True, text=True)
        if done.returncode != 0:
            raise BytecodeError(f"{IMAGE_PYTHON} could not compile the image's modules: "
                                f"{done.stderr.strip()[-300:]}")
        for _source, _path, target in jobs:
            compiled = Path(target)
            if compiled.exists():
                compiled.replace(cache / compiled.name)
            else:
                (cache / f"{compiled.stem}.none").touch()
