"""The images minikube-py ships, all built from Debian's busybox-static: pause, busybox, echo.

No registry is reachable here, so the cluster brings its own images:

    localhost/pause:3.9      the pod sandbox ("infra") container: holds the pod's namespaces
    localhost/busybox:1.36   a shell and the usual tools (Cmd ["sh"], like docker.io/busybox)
    localhost/echo:1.0       an HTTP server on $PORT (8080) answering with the pod's name and IP

Each is one layer: /bin/busybox with a symlink per applet, /etc/passwd and /etc/group, and
the image's own scripts. The "localhost/" prefix keeps CRI from normalising the names to
docker.io/library/...
"""

from __future__ import annotations

import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from minikube_py.images.oci import ImageArchive, ImageConfig, Layer, write_oci_archive

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

# One HTTP exchange on stdin/stdout: read the request head up to the blank line, then
# answer with the pod's name and IP (downward-API POD_NAME / POD_IP when the pod sets them).
ECHO_HANDLER_SCRIPT = r"""#!/bin/sh
while read -r -t 5 line; do
  [ -z "${line%$'\r'}" ] && break
done
name="${POD_NAME:-$(hostname)}"
ip="${POD_IP:-$(ip -o -4 addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}')}"
body="pod=${name} ip=${ip}
"
printf 'HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n'
printf 'Content-Length: %d\r\nConnection: close\r\n\r\n%s' "${#body}" "$body"
"""

PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n"
GROUP = "root:x:0:\nnobody:x:65534:\n"


@dataclass(frozen=True)
class ImageSpec:
    """One shipped image: its name, its default command, and the files it adds to busybox."""

    name: str
    config: ImageConfig
    scripts: dict[str, str] = field(default_factory=dict)

    @property
    def archive_name(self) -> str:
        """The archive's file name, e.g. "echo-1.0.tar" for localhost/echo:1.0."""
        repository, _, tag = self.name.rpartition(":")
        return f"{repository.rpartition('/')[2]}-{tag}.tar"


PAUSE = ImageSpec("localhost/pause:3.9", ImageConfig(entrypoint=("/pause",)),
                  {"/pause": PAUSE_SCRIPT})
BUSYBOX = ImageSpec("localhost/busybox:1.36", ImageConfig(cmd=("sh",)))
ECHO = ImageSpec(
    "localhost/echo:1.0",
    ImageConfig(entrypoint=("/bin/echo-server",), exposed_ports=("8080/tcp",)),
    {"/bin/echo-server": ECHO_SERVER_SCRIPT, "/bin/echo-handler": ECHO_HANDLER_SCRIPT},
)
CATALOG = (PAUSE, BUSYBOX, ECHO)


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
    for applet in busybox_applets(busybox):
        layer.add_symlink(f"/bin/{applet}", "busybox")
    layer.add_symlink("/usr/bin/env", "/bin/busybox")
    layer.add_file("/etc/passwd", PASSWD.encode())
    layer.add_file("/etc/group", GROUP.encode())
    layer.add_directory("/root", 0o700)
    layer.add_directory("/tmp", 0o1777)
    layer.add_directory("/home")
    layer.add_directory("/var")
    return layer


def build_image(spec: ImageSpec, output_dir: Path, busybox: Path = BUSYBOX_BINARY
                ) -> ImageArchive:
    """Write one shipped image as an OCI archive in output_dir."""
    layer = busybox_layer(busybox)
    for path, script in spec.scripts.items():
        layer.add_file(path, script.encode(), 0o755)
    return write_oci_archive(Path(output_dir) / spec.archive_name, spec.name, layer,
                             spec.config)


def build_catalog(output_dir: Path, busybox: Path = BUSYBOX_BINARY) -> list[ImageArchive]:
    """Write every shipped image (pause, busybox, echo) as OCI archives in output_dir."""
    return [build_image(spec, output_dir, busybox) for spec in CATALOG]
