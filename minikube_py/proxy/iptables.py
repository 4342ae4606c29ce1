"""The iptables mode: one `iptables-restore --noflush` per sync, plus the few jumps from
the built-in chains, ensured one by one (upstream's utiliptables). `IPTablesWriter` is
the mode's rule writer for the proxier (rules.py says what the rules are).
"""

from __future__ import annotations

import re

from minikube_py.proxy.commands import Commands, RestoreError
from minikube_py.proxy.rules import (
    JUMPS,
    SERVICE_CHAIN_PREFIXES,
    TOP_CHAINS,
    ProxyConfig,
    Tables,
    assemble,
    restore_input,
    rule_count,
    service_rules,
)
from minikube_py.proxy.serviceports import ServicePort

FAILED_LINE = re.compile(r"line:? (\d+) failed")


class IPTables(Commands):
    """The iptables commands the proxy runs, in this namespace or in `netns`."""

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


class IPTablesWriter:
    """The iptables mode's rule writer: the chains of the Services, written with one
    `iptables-restore --noflush` (only the chains that differ from the last write, but on
    a full sync every chain, and stale chains found with iptables-save are deleted)."""

    mode = "iptables"

    def __init__(self, config: ProxyConfig, netns: str | None = None) -> None:
        self.config = config
        self.iptables = IPTables(netns)
        self.written: Tables = {}

    def service_rules(self, ports: list[ServicePort]) -> Tables:
        return service_rules(ports, self.config)

    def chains(self, fragment: Tables) -> list[str]:
        return sorted({name for table in fragment.values() for name in table})

    async def write(self, fragments: list[Tables], *, full: bool) -> str:
        """Steps 2-3 of the proxier's sync; the restore input written ("" if none)."""
        desired = assemble(fragments)
        if full:
            stale = {table: {name for name in await self.iptables.chains(table)
                             if name in TOP_CHAINS[table]
                             or name.startswith(SERVICE_CHAIN_PREFIXES)}
                     for table in TOP_CHAINS}
            text = restore_input(desired, {}, stale=stale)
        else:
            text = restore_input(desired, self.written, stale={})
        if text:
            try:
                await self.iptables.restore(text)
            except RestoreError:
                self.written = {}  # unknown now: the retry writes everything
                raise
        if full:
            await self.iptables.ensure_jumps()
        self.written = desired
        return text

    def rule_counts(self) -> dict[str, int]:
        """Rules per table, for kubeproxy_sync_proxy_rules_iptables_total."""
        return {table: rule_count(self.written, table) for table in TOP_CHAINS}

    async def cleanup(self) -> str:
        """Remove everything this mode wrote; what went, in words."""
        return f"removed {await self.iptables.cleanup()} iptables chains"
