"""The files of the images that carry real programs: nginx, python, etcd and kube-proxy's
tools, from Debian.

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
    resource consumer
             the python above, with /resource-consumer: images/resource_consumer.py, the
             load the HPA's tests and lab drive
    etcd     Debian's /usr/bin/etcd (etcd-server) and /usr/bin/etcdctl (etcd-client), and
             the libraries they link (libc: Debian builds them with cgo)
    proxy tools
             what kube-proxy runs: iptables, iptables-save and iptables-restore (and the
             ip6tables ones) of the nf_tables backend, as this machine's, with the
             extensions libxtables loads for `-m comment`, `-m statistic`, ...; nft; and
             conntrack, which clears UDP flows
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from minikube_py.images import resource_consumer
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
ETCD_BINARIES = {Path("/usr/bin/etcd"): "etcd-server", Path("/usr/bin/etcdctl"): "etcd-client"}
XTABLES_NFT = Path("/usr/sbin/xtables-nft-multi")
XTABLES_COMMANDS = ("iptables", "iptables-save", "iptables-restore", "ip6tables",
                    "ip6tables-save", "ip6tables-restore")
# The packages of the other tools kube-proxy runs, by program.
PROXY_TOOLS = {Path("/usr/sbin/nft"): "nftables", Path("/usr/sbin/conntrack"): "conntrack"}
PYTHON_LIB_SKIPPED = {"test", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip",
                      "config-3.11-x86_64-linux-gnu", "__pycache__", "pydoc_data"}


class StripError(Exception):
    """strip could not read a file it was given as ELF."""


def add_host_file(layer: Layer, image_path: str, host_path: Path) -> None:
    """A file of this machine (symlinks followed), with its permission bits."""
    _add_as(layer, image_path, host_path, host_path.resolve().read_bytes())


def _add_as(layer: Layer, image_path: str, host_path: Path, content: bytes) -> None:
    """Add `content` as the file `host_path` (symlinks followed) in the image: with its
    permission bits, and recorded as a source of the layer."""
    layer.add_file(image_path, content, host_path.resolve().stat().st_mode & 0o7777)
    layer.record_source(host_path)


def add_stripped_file(layer: Layer, image_path: str, host_path: Path) -> None:
    """An ELF file of this machine without the sections its loader never reads (debugging
    information, the full symbol table): `strip --strip-unneeded`, as Debian strips what
    it packages. Wheels' extension modules often ship unstripped (uvloop's 13.6 MB are
    1.6 MB stripped), and every byte of a layer is pulled, hashed and unpacked on every
    node that runs the image."""
    strip = shutil.which("strip")
    if strip is None:
        raise FileNotFoundError("strip (Debian's binutils) is missing: `apt-get install "
                                "binutils`, or `make deps`, which installs it")
    real = host_path.resolve()
    with tempfile.TemporaryDirectory(prefix="minikube-py-strip-") as scratch:
        stripped = Path(scratch) / real.name
        done = subprocess.run([strip, "--strip-unneeded", "-o", str(stripped), str(real)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise StripError(f"strip {real}: {done.stderr.strip()}")
        _add_as(layer, image_path, host_path, stripped.read_bytes())


def add_libraries(layer: Layer, binary: Path, bundled: Path | None = None) -> None:
    """The dynamic loader and every library `binary` links, at this machine's paths (but
    those under `bundled`, which the layer has at its own path already: a wheel's
    <package>.libs/)."""
    for library in shared_libraries(binary):
        if bundled is None or not library.is_relative_to(bundled):
            add_host_file(layer, str(library), library)


def add_tree(layer: Layer, image_dir: str, host_dir: Path, skip: set[str] = frozenset()
             ) -> list[Path]:
    """Copy a directory tree (files and symlinks, skipping names in `skip`); the ELF
    files it held, whose libraries the caller adds."""
    elf_files = []
    for folder, dirs, files in os.walk(host_dir):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        layer.record_source(Path(folder))  # a file added or removed changes its mtime
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


def resource_consumer_files(layer: Layer) -> None:
    """Add Python 3.11 and the resource consumer as /resource-consumer (see the module's
    table)."""
    python_files(layer)
    program = Path(resource_consumer.__file__)
    layer.add_file("/resource-consumer", b"#!/usr/bin/python3\n" + program.read_bytes(), 0o755)
    layer.record_source(program)


def etcd_files(layer: Layer) -> None:
    """Add Debian's etcd and etcdctl (see the module's table)."""
    for binary, package in ETCD_BINARIES.items():
        if not binary.is_file():
            raise FileNotFoundError(f"{binary} is missing: apt-get install {package}")
        add_host_file(layer, str(binary), binary)
        add_libraries(layer, binary)
    layer.add_directory("/var/lib/etcd", 0o700)


def proxy_tools_files(layer: Layer) -> None:
    """Add iptables, nft and conntrack (see the module's table)."""
    for binary, package in {XTABLES_NFT: "iptables", **PROXY_TOOLS}.items():
        if not binary.is_file():
            raise FileNotFoundError(f"{binary} is missing: apt-get install {package}")
        add_host_file(layer, str(binary), binary)
        add_libraries(layer, binary)
    for command in XTABLES_COMMANDS:
        layer.add_symlink(f"/usr/sbin/{command}", XTABLES_NFT.name)
    # libxtables loads its extensions (libxt_comment.so, ...) from the folder it was built with
    for extensions in sorted(Path("/usr/lib").glob("*/xtables")):
        for extension in add_tree(layer, str(extensions), extensions):
            add_libraries(layer, extension)
    for name in ("/etc/protocols", "/etc/ethertypes"):
        if Path(name).is_file():
            add_host_file(layer, name, Path(name))
    layer.add_directory("/run")
