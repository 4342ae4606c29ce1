"""Running iptables: one `iptables-restore --noflush` per sync, plus the few jumps from the
built-in chains, ensured one by one (upstream's utiliptables).

With `netns` (a path such as /var/run/netns/mk-node-1) every command runs in that network
namespace through `nsenter --net`, so a proxy can program a node's tables while it talks
to the API server from the host.
"""

from __future__ import annotations

import asyncio
import logging
import re

from minikube_py.proxy.rules import JUMPS, SERVICE_CHAIN_PREFIXES, TOP_CHAINS

FAILED_LINE = re.compile(r"line:? (\d+) failed")
log = logging.getLogger(__name__)


class RestoreError(Exception):
    """iptables-restore refused the input; nothing of it was applied."""

    def __init__(self, message: str, line: str = "") -> None:
        super().__init__(message + (f"; the offending line: {line}" if line else ""))
        self.line = line


class IPTables:
    """The iptables commands the proxy runs, in this namespace or in `netns`."""

    def __init__(self, netns: str | None = None) -> None:
        self.prefix = ["nsenter", f"--net={netns}"] if netns else []

    async def _run(self, *command: str, stdin: bytes | None = None) -> tuple[int, str, str]:
        process = await asyncio.create_subprocess_exec(
            *self.prefix, *command, stdin=asyncio.subprocess.PIPE if stdin is not None else None,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await process.communicate(stdin)
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()

    async def restore(self, text: str) -> None:
        """Apply one restore input atomically (-w: wait for the xtables lock)."""
        code, _, err = await self._run("iptables-restore", "-w", "5", "--noflush",
                                       stdin=text.encode())
        if code != 0:
            match = FAILED_LINE.search(err)
            line = ""
            if match:
                lines = text.splitlines()
                number = int(match.group(1))
                line = lines[number - 1] if 0 < number <= len(lines) else ""
            raise RestoreError(f"iptables-restore failed: {err.strip()}", line)

    async def chains(self, table: str) -> set[str]:
        """The chains of a table now (iptables-save), for finding stale ones."""
        code, out, err = await self._run("iptables-save", "-t", table)
        if code != 0:
            raise RestoreError(f"iptables-save -t {table} failed: {err.strip()}")
        return {line[1:].split()[0] for line in out.splitlines() if line.startswith(":")}

    async def save(self) -> str:
        """iptables-save of the whole namespace (for tests and `mkctl`-style inspection)."""
        code, out, err = await self._run("iptables-save")
        if code != 0:
            raise RestoreError(f"iptables-save failed: {err.strip()}")
        return out

    async def ensure_jumps(self) -> None:
        """Each jump from a built-in chain into ours, inserted first if it is missing.
        Our top-level chains must exist before (the first restore creates them)."""
        for table, builtin, rule in JUMPS:
            code, _, _ = await self._run("iptables", "-w", "5", "-t", table, "-C", builtin,
                                         *rule)
            if code != 0:
                code, _, err = await self._run("iptables", "-w", "5", "-t", table, "-I",
                                               builtin, *rule)
                if code != 0:
                    raise RestoreError(f"iptables -t {table} -I {builtin}: {err.strip()}")

    async def cleanup(self) -> int:
        """kube-proxy --cleanup: remove the jumps, then flush and delete every chain of
        ours. Returns how many chains went."""
        for table, builtin, rule in JUMPS:
            while (await self._run("iptables", "-w", "5", "-t", table, "-D", builtin,
                                   *rule))[0] == 0:
                pass
        lines, removed = [], 0
        for table in ("filter", "nat"):
            ours = sorted(name for name in await self.chains(table)
                          if name in TOP_CHAINS[table] or name.startswith(SERVICE_CHAIN_PREFIXES))
            if ours:
                lines += [f"*{table}", *(f":{name} - [0:0]" for name in ours),
                          *(f"-X {name}" for name in ours), "COMMIT"]
                removed += len(ours)
        if lines:
            await self.restore("\n".join(lines) + "\n")
        return removed

    async def flush_udp_conntrack(self, destination: str, endpoint_ip: str = "") -> None:
        """Forget UDP flows to `destination` (only those NATed to `endpoint_ip`, when
        given), so their next datagram is routed afresh: upstream's ClearEntriesForNAT for
        an endpoint that went, ClearEntriesForIP for a Service that had no endpoint (its
        flows were rejected or dropped, and would stay so). Nothing to delete is not an
        error."""
        nat = ("--dst-nat", endpoint_ip) if endpoint_ip else ()
        await self._conntrack_delete("--orig-dst", destination, *nat)

    async def flush_udp_conntrack_port(self, node_port: int) -> None:
        """Forget UDP flows to a node port (upstream's ClearEntriesForPort)."""
        await self._conntrack_delete("--dport", str(node_port))

    async def _conntrack_delete(self, *match: str) -> None:
        try:
            await self._run("conntrack", "-D", "-p", "udp", *match)
        except FileNotFoundError:
            log.warning("conntrack is not installed (apt-get install conntrack): UDP flows "
                        "matching %s keep their old destination until they time out",
                        " ".join(match))
