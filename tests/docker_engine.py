"""A Docker engine for a test: the one that runs, else Debian's dockerd started here (there
is no systemd), stopped when the test ends, and what it changed on the host put back: the
FORWARD policy, its iptables rules and chains, its docker0 bridge.

Those changes are the machine's, which other clusters share: use it only under the
cluster lock (tests/conftest.py's CLUSTER_TESTS run there).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

SOCKET = Path("/var/run/docker.sock")
TABLES = ("filter", "nat")
# what dockerd writes into iptables: its chains, and the rules of its bridges
DOCKER_RULE = re.compile(r"DOCKER|docker0|\bbr-[0-9a-f]{12}\b")
# Debian's packages, and the command each brings
PACKAGES = {"docker.io": "dockerd", "docker-compose": "docker-compose",
            "debootstrap": "debootstrap"}


def docker(*args: str, check: bool = True, timeout: float = 120,
           input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Debian's docker client (docker.io's /usr/bin/docker, which speaks its engine's API)."""
    return subprocess.run(["/usr/bin/docker", *args], capture_output=True, text=True,
                          check=check, timeout=timeout, input=input)


def engine_answers() -> bool:
    return SOCKET.is_socket() and docker("version", check=False, timeout=30).returncode == 0


def install_missing() -> None:
    """docker.io, docker-compose and debootstrap, each when its command is missing (as
    `make apt` installs them)."""
    missing = [package for package, command in PACKAGES.items()
               if shutil.which(command) is None]
    if missing:
        subprocess.run(["apt-get", "install", "-y", "-q", *missing], check=True,
                       capture_output=True, timeout=900,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


@dataclass(frozen=True)
class HostNetwork:
    """What dockerd may change: each table's rules, the FORWARD policy, the links."""

    rules: dict[str, list[str]]
    links: frozenset[str]

    @classmethod
    def now(cls) -> HostNetwork:
        rules = {table: subprocess.run(["iptables", "-w", "-t", table, "-S"],
                                       capture_output=True, text=True,
                                       check=True).stdout.splitlines() for table in TABLES}
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True,
                               check=True).stdout
        return cls(rules, frozenset(re.findall(r"^\d+: ([^:@]+)", links, re.M)))

    def changed_since(self, before: HostNetwork) -> list[str]:
        """dockerd's rules, chains and bridges that `before` had not."""
        found = []
        for table in TABLES:
            had = set(before.rules[table])
            found += [f"{table}: {line}" for line in self.rules[table]
                      if line not in had and DOCKER_RULE.search(line)]
        found += [f"link {name}" for name in sorted(self.links - before.links)
                  if name == "docker0" or name.startswith("br-")]
        return found


def namespaces() -> set[str]:
    """The network namespaces Docker holds by a file (nsfs mounts under /run/docker/netns),
    where the stack's containers have theirs. Not /run/netns: other tests running meanwhile
    add and delete theirs there with `ip netns`, and the stack puts none there.
    (Docker removes a gone container's empty netns file a minute later.)"""
    return {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if line.split(" - ")[1].startswith("nsfs ")
            and line.split()[4].startswith(("/run/docker/netns/", "/var/run/docker/netns/"))}


def put_back(before: HostNetwork) -> None:
    """Undo what dockerd changed since `before`: its rules (jumps first), its chains, the
    FORWARD policy, docker0."""
    now = HostNetwork.now()
    for table in TABLES:
        had = set(before.rules[table])
        added = [line for line in now.rules[table] if line not in had]
        for line in added:
            if line.startswith("-A ") and DOCKER_RULE.search(line):
                subprocess.run(["iptables", "-w", "-t", table, "-D", *shlex.split(line)[1:]],
                               capture_output=True)
        chains = [line.split()[1] for line in added
                  if line.startswith("-N ") and DOCKER_RULE.search(line)]
        for chain in chains:
            subprocess.run(["iptables", "-w", "-t", table, "-F", chain], capture_output=True)
        for chain in chains:
            subprocess.run(["iptables", "-w", "-t", table, "-X", chain], capture_output=True)
        for line in before.rules[table]:
            if line.startswith("-P ") and line not in now.rules[table]:
                subprocess.run(["iptables", "-w", "-t", table, *line.split()], check=True)
    for name in sorted(now.links - before.links):
        if name == "docker0" or name.startswith("br-"):
            subprocess.run(["ip", "link", "del", name], capture_output=True)


@contextmanager
def docker_engine(log: Path) -> Iterator[None]:
    """The running engine, or dockerd started now (its log in `log`) and, at the end,
    stopped with what it changed on the host put back."""
    if os.geteuid() != 0:
        pytest.skip("dockerd needs root")
    install_missing()
    if engine_answers():
        yield
        return
    before = HostNetwork.now()
    with log.open("ab") as output:
        daemon = subprocess.Popen(["dockerd", "--host", f"unix://{SOCKET}"], stdout=output,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not engine_answers():
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"dockerd did not answer on {SOCKET}; its log:\n"
                                     + log.read_text()[-3000:])
            time.sleep(0.2)
        yield
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait()
        put_back(before)
