"""How the proxy runs its tools (iptables, nft, conntrack): as child processes, in this
network namespace or, with `netns` (a path such as /var/run/netns/mk-node-1), in that one
through `nsenter --net`, so a proxy can program a node's tables while it talks to the API
server from the host."""

from __future__ import annotations

import asyncio


class RestoreError(Exception):
    """The proxy's tables could not be written (iptables-restore or nft refused the
    input); nothing of it was applied."""

    def __init__(self, message: str, line: str = "") -> None:
        super().__init__(message + (f"; the offending line: {line}" if line else ""))
        self.line = line


class Commands:
    """Runs commands in this namespace or in `netns`."""

    def __init__(self, netns: str | None = None) -> None:
        self.prefix = ["nsenter", f"--net={netns}"] if netns else []

    async def _run(self, *command: str, stdin: bytes | None = None) -> tuple[int, str, str]:
        """The exit code, stdout and stderr of one command."""
        process = await asyncio.create_subprocess_exec(
            *self.prefix, *command, stdin=asyncio.subprocess.PIPE if stdin is not None else None,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await process.communicate(stdin)
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()
