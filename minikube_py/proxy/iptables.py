"""The iptables mode: one `iptables-restore --noflush` per sync, plus the few jumps from
the built-in chains, ensured one by one (upstream's utiliptables). `IPTablesWriter` is
the mode's rule writer for the proxier (rules.py says what the rules are).

A full sync reads the tables first (one iptables-save) and writes only the chains whose
rules differ from ours, so the hourly sync that repairs drift costs little when there is
none. Why that, and why a large restore starts with `-S`: docs/decisions.md.
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
    rule_text,
    saved_form,
    service_rules,
)
from minikube_py.proxy.serviceports import ServicePort

FAILED_LINE = re.compile(r"line:? (\d+) failed")
LIST_FIRST_FROM = 1000
"""From this many chains in one restore input, each table's part starts with `-S`. The
nf_tables iptables-restore keeps, with --noflush, a sorted list of the chains the input
names and inserts every rule's chain and jump target into it one by one: a cost of rules x
chains (5 s for 11,000 chains and 43,000 rules). A command that names no chain makes it
fetch all chains at once and skip that list; `-S` is the only such command that changes
nothing. It costs a read of the table, which is cheaper above this size."""


def ours(table: str, name: str) -> bool:
    """A chain this proxy owns (the fixed ones, and the per-Service ones)."""
    return name in TOP_CHAINS[table] or name.startswith(SERVICE_CHAIN_PREFIXES)


class IPTables(Commands):
    """The iptables commands the proxy runs, in this namespace or in `netns`."""

    async def restore(self, text: str) -> None:
        """Apply one restore input atomically (-w: wait for the xtables lock)."""
        if text.count("\n:") >= LIST_FIRST_FROM:
            text = re.sub(r"^(\*\w+)$", r"\1\n-S", text, flags=re.MULTILINE)
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

    async def tables(self) -> Tables:
        """Every chain of the namespace's tables with its rules, as iptables-save prints
        them (one iptables-save)."""
        code, out, err = await self._run("iptables-save")
        if code != 0:
            raise RestoreError(f"iptables-save failed: {err.strip()}")
        tables: Tables = {}
        chains: dict[str, list[str]] = {}
        for line in out.splitlines():
            if line.startswith("*"):
                chains = tables.setdefault(line[1:], {})
            elif line.startswith(":"):
                chains.setdefault(line[1:].split()[0], [])
            elif line.startswith("-A "):
                _, name, rule = line.split(" ", 2)
                chains.setdefault(name, []).append(rule)
        return tables

    async def save(self) -> str:
        """iptables-save of the whole namespace (for tests and `mkctl`-style inspection)."""
        code, out, err = await self._run("iptables-save")
        if code != 0:
            raise RestoreError(f"iptables-save failed: {err.strip()}")
        return out

    async def ensure_jumps(self, jumps: tuple[tuple[str, str, list[str]], ...] = JUMPS
                           ) -> None:
        """Each jump from a built-in chain into ours, inserted first if it is missing.
        Our top-level chains must exist before (the first restore creates them)."""
        for table, builtin, rule in jumps:
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
        tables = await self.tables()
        for table in ("filter", "nat"):
            owned = sorted(name for name in tables.get(table) or {} if ours(table, name))
            if owned:
                lines += [f"*{table}", *(f":{name} - [0:0]" for name in owned),
                          *(f"-X {name}" for name in owned), "COMMIT"]
                removed += len(owned)
        if lines:
            await self.restore("\n".join(lines) + "\n")
        return removed


class IPTablesWriter:
    """The iptables mode's rule writer: the chains of the Services, written with one
    `iptables-restore --noflush`: the chains that differ from the last write or, on a full
    sync, from what iptables-save shows; chains of ours that it shows and no Service wants
    any more are deleted, and missing jumps from the built-in chains put back."""

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
        missing_jumps: tuple[tuple[str, str, list[str]], ...] = ()
        if full:
            kernel = await self.iptables.tables()
            same: Tables = {}
            stale: dict[str, set[str]] = {}
            for table in TOP_CHAINS:
                present = kernel.get(table) or {}
                stale[table] = {name for name in present if ours(table, name)}
                same[table] = {name: rules for name, rules in (desired.get(table) or {}).items()
                               if name in present
                               and present[name] == [saved_form(rule) for rule in rules]}
            text = restore_input(desired, same, stale=stale)
            missing_jumps = tuple(
                jump for jump in JUMPS
                if saved_form(rule_text(jump[2]))
                not in ((kernel.get(jump[0]) or {}).get(jump[1]) or []))
        else:
            text = restore_input(desired, self.written, stale={})
        if text:
            try:
                await self.iptables.restore(text)
            except RestoreError:
                self.written = {}  # unknown now: the retry writes everything
                raise
        if missing_jumps:
            await self.iptables.ensure_jumps(missing_jumps)
        self.written = desired
        return text

    def rule_counts(self) -> dict[str, int]:
        """Rules per table, for kubeproxy_sync_proxy_rules_iptables_total."""
        return {table: rule_count(self.written, table) for table in TOP_CHAINS}

    async def cleanup(self) -> str:
        """Remove everything this mode wrote; what went, in words."""
        return f"removed {await self.iptables.cleanup()} iptables chains"
