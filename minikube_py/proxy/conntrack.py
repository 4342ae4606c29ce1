"""Forgetting UDP flows whose Service changed under them (upstream's pkg/proxy/conntrack),
with the `conntrack` tool. The same in every proxy mode: conntrack is below both."""

from __future__ import annotations

import logging

from minikube_py.proxy.commands import Commands

log = logging.getLogger(__name__)


class Conntrack(Commands):
    """`conntrack -D` in this namespace or in `netns`."""

    async def flush_udp(self, destination: str, endpoint_ip: str = "") -> None:
        """Forget UDP flows to `destination` (only those NATed to `endpoint_ip`, when
        given), so their next datagram is routed afresh: upstream's ClearEntriesForNAT for
        an endpoint that went, ClearEntriesForIP for a Service that had no endpoint (its
        flows were rejected or dropped, and would stay so). Nothing to delete is not an
        error."""
        nat = ("--dst-nat", endpoint_ip) if endpoint_ip else ()
        await self._delete("--orig-dst", destination, *nat)

    async def flush_udp_port(self, node_port: int) -> None:
        """Forget UDP flows to a node port (upstream's ClearEntriesForPort)."""
        await self._delete("--dport", str(node_port))

    async def _delete(self, *match: str) -> None:
        try:
            await self._run("conntrack", "-D", "-p", "udp", *match)
        except FileNotFoundError:
            log.warning("conntrack is not installed (apt-get install conntrack): UDP flows "
                        "matching %s keep their old destination until they time out",
                        " ".join(match))
