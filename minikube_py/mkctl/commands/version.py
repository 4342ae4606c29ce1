"""`mkctl version`: the client's version and the server's (`GET /version`).

    Client Version: v1.37.0-minikube-py
    Server Version: v1.37.0-minikube-py

mkctl reports its own build (the project's version, built with CPython) where kubectl
reports its Go build and the kustomize it embeds; mkctl embeds none.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import MkctlError
from minikube_py.mkctl.flags import BOOL, Flag

# version.Info's fields, in the Go struct's order.
INFO_FIELDS = ("major", "minor", "gitVersion", "gitCommit", "gitTreeState", "buildDate",
               "goVersion", "compiler", "platform")
_MACHINES = {"x86_64": "amd64", "aarch64": "arm64"}


def client_version() -> dict[str, str]:
    machine = os.uname().machine
    return {"major": "1", "minor": "37", "gitVersion": "v1.37.0-minikube-py", "gitCommit": "",
            "gitTreeState": "clean", "buildDate": "2026-11-21T00:00:00Z",
            "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
            "compiler": "cpython",
            "platform": f"{sys.platform}/{_MACHINES.get(machine, machine)}"}


def _as_info(document: dict[str, Any]) -> dict[str, Any]:
    """The server's answer as version.Info holds it: known fields, in struct order."""
    return {name: document.get(name, "") for name in INFO_FIELDS}


def _minor(info: dict[str, Any]) -> int | None:
    digits = "".join(char for char in str(info.get("minor", "")) if char.isdigit())
    return int(digits) if digits else None


def run(inv: Invocation) -> None:
    output = inv.flags["output"]
    if output not in ("", "yaml", "json"):
        raise MkctlError("--output must be 'yaml' or 'json'")
    if inv.args:
        raise inv.usage_error(f"unexpected arguments: [{' '.join(inv.args)}]")
    versions: dict[str, Any] = {"clientVersion": client_version()}
    failure: Exception | None = None
    if not inv.flags["client"]:
        try:
            from minikube_py.mkctl.transport import timeout_param

            versions["serverVersion"] = _as_info(inv.client.get_json(
                "/version", {"timeout": timeout_param(inv.rest_config)}))
        except Exception as error:  # printed after the client's version, as kubectl does
            failure = error
    if output == "":
        inv.out.write(f"Client Version: {versions['clientVersion']['gitVersion']}\n")
        if "serverVersion" in versions:
            inv.out.write(f"Server Version: {versions['serverVersion']['gitVersion']}\n")
    elif output == "json":
        from minikube_py.mkctl.printers.gojson import dumps

        inv.out.write(dumps(versions, indent="  ", sort_keys=False) + "\n")
    else:
        from minikube_py.api.goyaml.emit import dump

        inv.out.write(dump(versions))
    if failure is not None:
        raise failure
    server = versions.get("serverVersion")
    client_minor, server_minor = _minor(versions["clientVersion"]), _minor(server or {})
    if server and client_minor is not None and server_minor is not None and (
            abs(client_minor - server_minor) > 1):
        inv.err.write(f"WARNING: version difference between client (1.{client_minor}) and "
                      f"server ({server['major']}.{server_minor}) exceeds the supported minor "
                      "version skew of +/-1\n")


COMMAND = Command(
    name="version",
    summary="Print the client and server version information",
    description="Print the client and server version information for the current context.",
    usage="version [flags] [options]",
    run=run,
    flags=[
        Flag("client", BOOL, help="If true, shows client version only (no server required)."),
        Flag("output", shorthand="o", help="One of 'yaml' or 'json'."),
    ],
    examples="""  # Print the client and server versions for the current context
  mkctl version""",
)
