"""The images minikube-py ships, built on this machine from Debian's packages.

No outside registry is reachable here, so the cluster brings its own images, under the
names tutorials use (the local registry answers for docker.io and registry.k8s.io):

    localhost/pause:3.9, registry.k8s.io/pause:3.10 and :3.9
                             the pod sandbox ("infra") container: holds the pod's namespaces
    localhost/busybox:1.36, busybox:1.36, busybox:1.28, busybox:latest
                             a shell and the usual tools (Cmd ["sh"]); wget takes -T
                             (--timeout), which Debian's busybox leaves out
    localhost/echo:1.0       an HTTP server on $PORT (8080) answering with the pod's name and IP
    nginx:latest, nginx:1.14.2, nginx:1.15.4
                             Debian 12's nginx 1.22 serving its welcome page on port 80,
                             which names the tag: three images (the older tags for the
                             tutorials and client tests that name them), so that a rolling
                             update from one tag to another changes what the pods serve
    python:3, python:3.11, python:latest
                             Debian 12's Python 3.11 (`python3 -m http.server` works)
    localhost/python-kubernetes:1.0
                             that Python with Debian's python3-kubernetes, the official
                             client: for programs that talk to the API server from a pod.
                             Built on demand only (`minikube-py image build
                             localhost/python-kubernetes:1.0`), not by every `up`
    localhost/resource-consumer:1.0, registry.k8s.io/e2e-test-images/resource-consumer:1.13
                             upstream's load for autoscaling tests: an HTTP server on 8080
                             that burns the millicores and holds the megabytes it is asked
                             for (images/resource_consumer.py), on that Python. On demand
                             too (`minikube-py image build localhost/resource-consumer:1.0`)

Each is one layer: /bin/busybox (busybox-static) with a symlink per applet, /etc/passwd and
/etc/group, then the image's own scripts or programs (programs.py). An image is built once
and known by all its names; "localhost/" names stay as CRI gives them, the others expand to
docker.io/library/... as in any cluster.
"""

from __future__ import annotations

import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from minikube_py.images.oci import (
    DEFAULT_PATH,
    ImageArchive,
    ImageConfig,
    Layer,
    write_oci_archive,
)
from minikube_py.images.programs import (
    nginx_files,
    python_files,
    python_kubernetes_files,
    resource_consumer_files,
)

BUSYBOX_BINARY = Path("/bin/busybox")
PT_INTERP = 3  # ELF program header type: "run me with this dynamic loader"

# What upstream's pause binary does (build/pause/linux/pause.c), in shell: wait for a
# stop signal and exit 0 on it. As PID 1 of the sandbox it also reaps orphans while it waits.
PAUSE_SCRIPT = """\
#!/bin/sh
trap 'exit 0' TERM INT
sleep infinity &
wait
"""

# One listener; `nc -ll -e` forks a handler per connection, so requests are served
# concurrently. The trap lets the container stop at once on SIGTERM (PID 1 ignores
# signals it has no handler for).
ECHO_SERVER_SCRIPT = """\
#!/bin/sh
trap 'exit 0' TERM INT
nc -ll -p "${PORT:-8080}" -e /bin/echo-handler &
wait
"""

# One HTTP exchange on stdin/stdout: read the request head up to the blank line, log the
# request line to stderr (the container's log: `kubectl logs` shows the traffic), then
# answer with the pod's name and IP (downward-API POD_NAME / POD_IP when the pod sets them).
ECHO_HANDLER_SCRIPT = r"""#!/bin/sh
read -r -t 5 request
while read -r -t 5 line; do
  [ -z "${line%$'\r'}" ] && break
done
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) ${request%$'\r'} 200" >&2
name="${POD_NAME:-$(hostname)}"
ip="${POD_IP:-$(ip -o -4 addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}')}"
body="pod=${name} ip=${ip}
"
printf 'HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n'
printf 'Content-Length: %d\r\nConnection: close\r\n\r\n%s' "${#body}" "$body"
"""

# Debian's busybox-static leaves out wget's -T/--timeout (FEATURE_WGET_TIMEOUT; given -T,
# its wget crashes), which tutorials use to probe a path a NetworkPolicy may close
# (`wget --spider --timeout=1 nginx`). /bin/wget takes it and runs busybox's wget under
# `timeout` for that long, failing as busybox's own does ("download timed out", status 1).
# The signal is SIGPIPE, the one the shell does not report ("Terminated") when it ends a
# command.
WGET_SCRIPT = """\
#!/bin/sh
seconds=
count=$#
while [ "$count" -gt 0 ]; do
  arg=$1
  shift
  count=$((count - 1))
  case $arg in
    -T | --timeout) seconds=$1; shift; count=$((count - 1)) ;;
    -T*) seconds=${arg#-T} ;;
    --timeout=*) seconds=${arg#--timeout=} ;;
    *) set -- "$@" "$arg" ;;
  esac
done
if [ -z "$seconds" ]; then
  exec busybox wget "$@"
fi
busybox timeout -s PIPE "$seconds" busybox wget "$@"
status=$?
if [ "$status" -eq 141 ]; then
  echo "wget: download timed out" >&2
  exit 1
fi
exit "$status"
"""

PASSWD = ("root:x:0:0:root:/root:/bin/sh\n"
          "www-data:x:33:33:www-data:/var/www:/bin/false\n"
          "nobody:x:65534:65534:nobody:/home:/bin/false\n")
GROUP = "root:x:0:\nwww-data:x:33:\nnobody:x:65534:\n"


@dataclass(frozen=True)
class ImageSpec:
    """One shipped image: its name, its default command, the files it adds to busybox
    (scripts, and programs added by `add_files(layer, cache_dir)`), and the other names it
    goes by in the registry."""

    name: str
    config: ImageConfig
    scripts: dict[str, str] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    add_files: Callable[[Layer, Path], None] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def archive_name(self) -> str:
        """The archive's file name, e.g. "echo-1.0.tar" for localhost/echo:1.0."""
        repository, _, tag = self.name.rpartition(":")
        return f"{repository.rpartition('/')[2]}-{tag}.tar"


PAUSE = ImageSpec("localhost/pause:3.9", ImageConfig(entrypoint=("/pause",)),
                  {"/pause": PAUSE_SCRIPT},
                  aliases=("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.9"))
BUSYBOX = ImageSpec("localhost/busybox:1.36", ImageConfig(cmd=("sh",)),
                    aliases=("docker.io/library/busybox:1.36",
                             "docker.io/library/busybox:1.28",
                             "docker.io/library/busybox:latest"))
ECHO = ImageSpec(
    "localhost/echo:1.0",
    ImageConfig(entrypoint=("/bin/echo-server",), exposed_ports=("8080/tcp",)),
    {"/bin/echo-server": ECHO_SERVER_SCRIPT, "/bin/echo-handler": ECHO_HANDLER_SCRIPT},
)


def nginx_image(tag: str) -> ImageSpec:
    """Debian's nginx as docker.io/library/nginx:<tag>, its welcome page naming the tag."""
    return ImageSpec(
        f"docker.io/library/nginx:{tag}",
        ImageConfig(cmd=("nginx", "-g", "daemon off;"), exposed_ports=("80/tcp",)),
        add_files=partial(nginx_files, tag=tag))


NGINX = nginx_image("latest")
NGINX_TUTORIAL_TAGS = (nginx_image("1.14.2"), nginx_image("1.15.4"))
PYTHON = ImageSpec(
    "docker.io/library/python:3",
    ImageConfig(cmd=("python3",), env=(DEFAULT_PATH, "LANG=C.UTF-8")),
    aliases=("docker.io/library/python:3.11", "docker.io/library/python:latest"),
    add_files=lambda layer, _cache: python_files(layer))
PYTHON_KUBERNETES = ImageSpec(
    "localhost/python-kubernetes:1.0",
    ImageConfig(cmd=("python3",), env=(DEFAULT_PATH, "LANG=C.UTF-8")),
    add_files=python_kubernetes_files)
RESOURCE_CONSUMER = ImageSpec(
    "localhost/resource-consumer:1.0",
    ImageConfig(entrypoint=("/resource-consumer",), exposed_ports=("8080/tcp",),
                env=(DEFAULT_PATH, "LANG=C.UTF-8", "PYTHONUNBUFFERED=1")),
    aliases=("registry.k8s.io/e2e-test-images/resource-consumer:1.13",),
    add_files=lambda layer, _cache: resource_consumer_files(layer))
CATALOG = (PAUSE, BUSYBOX, ECHO, NGINX, *NGINX_TUTORIAL_TAGS, PYTHON)
"""The images `up` builds and pushes."""
ON_DEMAND = (PYTHON_KUBERNETES, RESOURCE_CONSUMER)
"""Images built only when asked for by name (`minikube-py image build NAME`)."""
BASE_CATALOG = (PAUSE, BUSYBOX, ECHO)
"""The images built from busybox alone: quick to build, what a node without a registry
(the tests' containerd node) imports."""


def is_static_executable(binary: bytes) -> bool:
    """Whether an ELF executable runs without a dynamic loader (has no PT_INTERP header):
    in an image that holds nothing but busybox, a dynamic one cannot start."""
    if binary[:4] != b"\x7fELF":
        return False
    order = "<" if binary[5] == 1 else ">"
    if binary[4] == 2:  # 64-bit: e_phoff at 0x20, e_phentsize and e_phnum at 0x36
        (table,) = struct.unpack_from(order + "Q", binary, 0x20)
        entry_size, entries = struct.unpack_from(order + "HH", binary, 0x36)
    else:  # 32-bit: e_phoff at 0x1c, e_phentsize and e_phnum at 0x2a
        (table,) = struct.unpack_from(order + "I", binary, 0x1C)
        entry_size, entries = struct.unpack_from(order + "HH", binary, 0x2A)
    return all(struct.unpack_from(order + "I", binary, table + i * entry_size)[0] != PT_INTERP
               for i in range(entries))


def busybox_applets(busybox: Path = BUSYBOX_BINARY) -> list[str]:
    """The applets this busybox binary provides (sh, sleep, nc, httpd, wget, ...)."""
    listed = subprocess.run([str(busybox), "--list"], capture_output=True, text=True,
                            check=True)
    return [name for name in listed.stdout.split() if name != "busybox"]


def busybox_layer(busybox: Path = BUSYBOX_BINARY) -> Layer:
    """The base filesystem: /bin/busybox, /bin/<applet> symlinks, users, /tmp and /root."""
    if not busybox.is_file():
        raise FileNotFoundError(f"{busybox} is missing: install busybox-static "
                                "(apt-get install busybox-static)")
    binary = busybox.read_bytes()
    if not is_static_executable(binary):
        raise ValueError(f"{busybox} is linked dynamically: install busybox-static "
                         "(apt-get install busybox-static)")
    layer = Layer()
    layer.add_file("/bin/busybox", binary, 0o755)
    layer.record_source(busybox)
    for applet in busybox_applets(busybox):
        layer.add_symlink(f"/bin/{applet}", "busybox")
    layer.add_symlink("/usr/bin/env", "/bin/busybox")
    layer.add_file("/bin/wget", WGET_SCRIPT.encode(), 0o755)
    layer.add_file("/etc/passwd", PASSWD.encode())
    layer.add_file("/etc/group", GROUP.encode())
    layer.add_directory("/root", 0o700)
    layer.add_directory("/tmp", 0o1777)
    layer.add_directory("/home")
    layer.add_directory("/var")
    return layer


def build_image(spec: ImageSpec, output_dir: Path, busybox: Path = BUSYBOX_BINARY
                ) -> ImageArchive:
    """Write one shipped image as an OCI archive in output_dir (downloaded packages are
    kept in output_dir/debs for the next build)."""
    layer = busybox_layer(busybox)
    for path, script in spec.scripts.items():
        layer.add_file(path, script.encode(), 0o755)
    if spec.add_files is not None:
        spec.add_files(layer, Path(output_dir) / "debs")
    return write_oci_archive(Path(output_dir) / spec.archive_name, spec.name, layer,
                             spec.config)


def build_catalog(output_dir: Path, busybox: Path = BUSYBOX_BINARY,
                  specs: tuple[ImageSpec, ...] = BASE_CATALOG) -> list[ImageArchive]:
    """Write shipped images (by default the busybox-only ones) as OCI archives."""
    return [build_image(spec, output_dir, busybox) for spec in specs]
