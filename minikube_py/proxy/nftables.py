"""The nftables mode: every sync is one `nft -f -` transaction on the proxy's own table,
`ip kube-proxy` (upstream's pkg/proxy/nftables). `NFTablesWriter` is the mode's rule
writer for the proxier (nftrules.py says what the rules are).

Because the table is the proxy's alone, a full sync needs no look at what is there: it
deletes the table and writes it anew in the same transaction, so no other program's rules
can be lost, and no packet ever sees half a table. An incremental sync rewrites only the
chains and map elements that changed.
"""

from __future__ import annotations

import re

from minikube_py.proxy.commands import Commands, RestoreError
from minikube_py.proxy.nftrules import (
    TABLE,
    Ruleset,
    assemble,
    full_input,
    incremental_input,
    service_ruleset,
)
from minikube_py.proxy.rules import ProxyConfig
from minikube_py.proxy.serviceports import ServicePort

FAILED_LINE = re.compile(r"^/dev/stdin:(\d+):", re.MULTILINE)


class NFTables(Commands):
    """The nft commands the proxy runs on its table, in this namespace or in `netns`."""

    table = TABLE

    async def apply(self, text: str) -> None:
        """Run one `nft -f -` transaction: all of it applies, or none."""
        code, _, err = await self._run("nft", "-f", "-", stdin=text.encode())
        if code != 0:
            match = FAILED_LINE.search(err)
            lines = text.splitlines()
            number = int(match.group(1)) if match else 0
            line = lines[number - 1] if 0 < number <= len(lines) else ""
            raise RestoreError(f"nft -f failed: {err.strip().splitlines()[0]}", line)

    async def list_table(self) -> str:
        """`nft list table` of the table (the proxy's: `ip kube-proxy`); "" when none."""
        code, out, _ = await self._run("nft", "list", "table", *self.table.split())
        return out if code == 0 else ""

    async def cleanup(self) -> bool:
        """kube-proxy --cleanup: delete the table. Whether there was one."""
        if not await self.list_table():
            return False
        await self.apply(f"delete table {self.table}\n")
        return True


class NFTablesWriter:
    """The nftables mode's rule writer."""

    mode = "nftables"

    def __init__(self, config: ProxyConfig, netns: str | None = None) -> None:
        self.config = config
        self.nft = NFTables(netns)
        self.written: Ruleset | None = None
        """The table as last written; None when unknown (nothing written yet, or a write
        failed), which makes the next write a full one."""

    def service_rules(self, ports: list[ServicePort]) -> Ruleset:
        return service_ruleset(ports, self.config)

    def chains(self, fragment: Ruleset) -> list[str]:
        return sorted(fragment.chains)

    async def write(self, fragments: list[Ruleset], *, full: bool) -> str:
        """Steps 2-3 of the proxier's sync; the nft input written ("" if none)."""
        desired = assemble(fragments)
        if full or self.written is None:
            text = full_input(desired)
        else:
            text = incremental_input(desired, self.written)
        if text:
            try:
                await self.nft.apply(text)
            except RestoreError:
                self.written = None
                raise
        self.written = desired
        return text

    def rule_counts(self) -> dict[str, int]:
        """Rules of the proxy's table (upstream reports none for this mode; the gauge is
        labelled with the table)."""
        return {"kube-proxy": self.written.rule_count() if self.written else 0}

    async def cleanup(self) -> str:
        """Remove everything this mode wrote; what went, in words."""
        gone = await self.nft.cleanup()
        return f"removed table {TABLE}" if gone else f"no table {TABLE}"
