"""The files of the images that carry real programs: nginx and python, from Debian.

Each function adds to a layer that already holds busybox (a shell and the usual tools):

    nginx    /usr/sbin/nginx of Debian's `nginx` package and the libraries it links, the
             configuration of `nginx-common`, its "Welcome to nginx!" page at
             /var/www/html with a line naming the image's tag (each tag is its own
             image, as upstream's are), and the logs sent to the container's stdout and
             stderr as the official image does (so `kubectl logs` shows each request)
    python   this machine's /usr/bin/python3.11 (Debian's python3.11) with its standard
             library and the libraries it and its extension modules link; `python3 -m
             http.server` works
    python-kubernetes
             the python above, with Debian's python3-kubernetes (the official client,
             22.6) and the packages it depends on in /usr/lib/python3/dist-packages,
             where Debian's python3.11 looks: in-cluster programs such as the seeds'
             scheduler lab run in it
"""

from __future__ import annotations

import os
from pathlib import Path

from minikube_py.images.debian import is_elf, shared_libraries, unpack_packages
from minikube_py.images.oci import Layer

NGINX_PACKAGES = ["nginx", "nginx-common"]
PYTHON = Path("/usr/bin/python3.11")
# python3-kubernetes and what it depends on, as `apt-cache depends` lists them (the pure
# Python ones; python3.11 itself comes from this machine).
PYTHON_KUBERNETES_PACKAGES = [
    "python3-kubernetes", "python3-certifi", "python3-dateutil", "python3-google-auth",
    "python3-requests", "python3-requests-oauthlib", "python3-six", "python3-urllib3",
    "python3-websocket", "python3-yaml", "python3-oauthlib", "python3-idna",
    "python3-charset-normalizer", "python3-chardet", "python3-cachetools", "python3-pyasn1",
    "python3-pyasn1-modules", "python3-rsa"]
DIST_PACKAGES = "/usr/lib/python3/dist-packages"
PYTHON_LIB = Path("/usr/lib/python3.11")
# Parts of the standard library a container has no use for (tests, IDLE, Tk, the
# static library for embedding, 2to3, pip's bootstrap).
PYTHON_LIB_SKIPPED = {"test", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip",
                      "config-3.11-x86_64-linux-gnu", "__pycache__", "pydoc_data"}


def add_host_file(layer: Layer, image_path: str, host_path: Path) -> None:
    """A file of this machine (symlinks followed), with its permission bits."""
    real = host_path.resolve()
    layer.add_file(image_path, real.read_bytes(), real.stat().st_mode & 0o7777)


def add_libraries(layer: Layer, binary: Path) -> None:
    """The dynamic loader and every library `binary` links, at this machine's paths."""
    for library in shared_libraries(binary):
        add_host_file(layer, str(library), library)


def add_tree(layer: Layer, image_dir: str, host_dir: Path, skip: set[str] = frozenset()
             ) -> list[Path]:
    """Copy a directory tree (files and symlinks, skipping names in `skip`); the ELF
    files it held, whose libraries the caller adds."""
    elf_files = []
    for folder, dirs, files in os.walk(host_dir):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        relative = Path(folder).relative_to(host_dir)
        for name in sorted(files):
            source = Path(folder) / name
            target = f"{image_dir}/{relative / name}"
            if source.is_symlink():
                layer.add_symlink(target, os.readlink(source))
            elif source.is_file():
                add_host_file(layer, target, source)
                if is_elf(source):
                    elf_files.append(source)
    return elf_files


TAG_LINE = "<p>This is minikube-py's image nginx:{tag} (Debian's nginx).</p>\n"


def welcome_page(page: bytes, tag: str) -> bytes:
    """Debian's welcome page with a line naming the tag after its heading."""
    heading = b"<h1>Welcome to nginx!</h1>\n"
    if heading not in page:
        raise ValueError("nginx's welcome page has no 'Welcome to nginx!' heading")
    return page.replace(heading, heading + TAG_LINE.format(tag=tag).encode(), 1)


def nginx_files(layer: Layer, cache: Path, tag: str) -> None:
    """Add Debian's nginx (see the module's table), its page naming `tag`."""
    root = unpack_packages(NGINX_PACKAGES, cache / "nginx")
    binary = root / "usr/sbin/nginx"
    add_host_file(layer, "/usr/sbin/nginx", binary)
    add_libraries(layer, binary)
    add_tree(layer, "/etc/nginx", root / "etc/nginx")
    layer.add_symlink("/etc/nginx/sites-enabled/default", "/etc/nginx/sites-available/default")
    page = welcome_page((root / "usr/share/nginx/html/index.html").read_bytes(), tag)
    layer.add_file("/usr/share/nginx/html/index.html", page)
    layer.add_file("/var/www/html/index.html", page)
    layer.add_symlink("/var/log/nginx/access.log", "/dev/stdout")
    layer.add_symlink("/var/log/nginx/error.log", "/dev/stderr")
    layer.add_directory("/var/lib/nginx")
    layer.add_directory("/run")


def python_files(layer: Layer) -> None:
    """Add this machine's Python 3.11 (see the module's table)."""
    if not PYTHON.is_file():
        raise FileNotFoundError(f"{PYTHON} is missing: apt-get install python3.11")
    add_host_file(layer, str(PYTHON), PYTHON)
    layer.add_symlink("/usr/bin/python3", "python3.11")
    layer.add_symlink("/usr/bin/python", "python3.11")
    add_libraries(layer, PYTHON)
    for extension in add_tree(layer, str(PYTHON_LIB), PYTHON_LIB, PYTHON_LIB_SKIPPED):
        add_libraries(layer, extension)


def python_kubernetes_files(layer: Layer, cache: Path) -> None:
    """Add Python 3.11 and the official Kubernetes client (see the module's table)."""
    python_files(layer)
    root = unpack_packages(PYTHON_KUBERNETES_PACKAGES, cache / "python-kubernetes")
    for extension in add_tree(layer, DIST_PACKAGES, root / DIST_PACKAGES.lstrip("/"),
                              {"__pycache__"}):
        add_libraries(layer, extension)  # PyYAML's _yaml links libyaml
