"""What a command is, and what it runs with.

A command module (minikube_py/mkctl/commands/<name>.py) defines

    COMMAND = Command(name="get", summary="Display one or many resources",
                      usage="get [(-o|--output=)...] (TYPE[.VERSION][.GROUP] [NAME] ...)",
                      flags=[Flag("watch", BOOL, shorthand="w", help="..."), ...],
                      run=run)

and `run(invocation)` does the work: it reads its flags and arguments from the
Invocation, asks it for what it needs (the namespace, the REST client, the RESTMapper),
writes to `invocation.out`, and raises an error from errors.py to fail. The Invocation
builds each of those only when first asked: `config current-context` never opens a
connection, and a warm `get` never fetches discovery.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from minikube_py.mkctl.errors import Exit, UsageError
from minikube_py.mkctl.flags import ARRAY, BOOL, STRINGS, Flag, Parsed

if TYPE_CHECKING:
    from minikube_py.mkctl.discovery import Discovery, RESTMapper
    from minikube_py.mkctl.kubeconfig import ClientConfig, LoadingRules, RestConfig
    from minikube_py.mkctl.transport import RESTClient

PROGRAM = "mkctl"


class Command:
    def __init__(self, name: str, summary: str, *, usage: str = "",
                 flags: list[Flag] | None = None,
                 run: Callable[[Invocation], None] | None = None,
                 subcommands: list[Command] | None = None, examples: str = "",
                 aliases: tuple[str, ...] = (), description: str = "") -> None:
        self.name = name
        self.summary = summary
        self.usage = usage  # after the program's name: "get [flags]"
        self.flags = flags or []
        self.run = run
        self.subcommands = subcommands or []
        self.examples = examples
        self.aliases = aliases
        self.description = description  # the help's first paragraph, if not the summary

    def subcommand(self, name: str) -> Command | None:
        return next((command for command in self.subcommands
                     if name == command.name or name in command.aliases), None)

    def help(self, path: str) -> str:
        """The help text, in kubectl's template (templates.MainUsageTemplate)."""
        parent = path.rsplit(" ", 1)[0]
        sections = [self.description or self.summary + "."]
        if self.aliases:
            sections.append("Aliases:\n" + ", ".join((self.name, *self.aliases)))
        if self.examples:
            sections.append("Examples:\n" + self.examples.rstrip())
        if self.subcommands:
            width = max(len(sub.name) for sub in self.subcommands) + 3
            sections.append("Available Commands:\n" + "\n".join(
                f"  {sub.name:<{width}}{sub.summary}" for sub in self.subcommands))
        if self.flags:
            sections.append("Options:\n" + flag_usages(self.flags))
        if self.run is not None:
            sections.append(f"Usage:\n  {parent} {self.usage or self.name + ' [options]'}")
        tips = []
        if self.subcommands:
            tips.append(f'Use "{path} <command> --help" for more information about a given '
                        "command.")
        tips.append(f'Use "{PROGRAM} options" for a list of global command-line options '
                    "(applies to all commands).")
        sections.append("\n".join(tips))
        return "\n\n".join(sections) + "\n"


def run_group(inv: Invocation, group: Command, *, help_to_stderr: bool = False) -> None:
    """A command group run without a subcommand (`mkctl rollout`): kubectl prints the help
    (some groups on stderr) and exits 1; an unknown subcommand is a usage error."""
    if inv.args:
        raise UsageError(f'unknown command "{inv.args[0]}"', inv.path)
    (inv.err if help_to_stderr else inv.out).write(group.help(inv.path))
    raise Exit(1)


def flag_usages(flags: list[Flag]) -> str:
    """kubectl's flag listing: `    -o, --output='':` then the help, indented by a tab."""
    entries = []
    for flag in sorted(flags, key=lambda f: f.name):
        default = flag.initial()
        if flag.kind == BOOL:
            shown = "true" if default else "false"
        elif flag.kind in (STRINGS, ARRAY):
            shown = "[" + ",".join(default) + "]"
        elif isinstance(default, str):
            shown = f"'{default}'"
        else:
            shown = str(default)
        short = f"-{flag.shorthand}, " if flag.shorthand else ""
        entries.append(f"    {short}--{flag.name}={shown}:\n\t{flag.help}")
    return "\n\n".join(entries)


class Invocation:
    """One run of one command: its flags and arguments, its output streams, and, built on
    first use, the kubeconfig, the connection and discovery."""

    def __init__(self, path: str, parsed: Parsed, out: TextIO = sys.stdout,
                 err: TextIO = sys.stderr) -> None:
        self.path = path  # "mkctl get", as usage messages name the command
        self.flags = parsed
        self.args = parsed.args
        self.out = out
        self.err = err

    # -- the kubeconfig --

    def loading_rules(self, *, resolve_paths: bool = True) -> LoadingRules:
        from minikube_py.mkctl.kubeconfig import LoadingRules

        return LoadingRules.default(self.flags["kubeconfig"], resolve_paths=resolve_paths)

    @cached_property
    def client_config(self) -> ClientConfig:
        from minikube_py.mkctl.kubeconfig import ClientConfig, Overrides

        flags = self.flags
        overrides = Overrides(
            context=flags["context"], cluster=flags["cluster"], user=flags["user"],
            namespace=flags["namespace"], server=flags["server"],
            tls_server_name=flags["tls-server-name"],
            insecure_skip_tls_verify=flags["insecure-skip-tls-verify"],
            certificate_authority=flags["certificate-authority"],
            client_certificate=flags["client-certificate"], client_key=flags["client-key"],
            token=flags["token"], username=flags["username"], password=flags["password"],
            impersonate=flags["as"], impersonate_uid=flags["as-uid"],
            impersonate_groups=flags["as-group"],
            timeout="" if flags["request-timeout"] == "0" else flags["request-timeout"])
        return ClientConfig(self.loading_rules().load(), overrides)

    def namespace(self) -> tuple[str, bool]:
        """The namespace to work in, and whether -n chose it."""
        return self.client_config.namespace()

    @cached_property
    def rest_config(self) -> RestConfig:
        return self.client_config.rest_config()

    # -- the server --

    @cached_property
    def client(self) -> RESTClient:
        from minikube_py.mkctl.transport import RESTClient

        return RESTClient(self.rest_config)

    @cached_property
    def discovery(self) -> Discovery:
        from minikube_py.mkctl.discovery import Discovery, cache_directory

        root = self.flags["cache-dir"] or os.environ.get("KUBECACHEDIR") or str(
            Path.home() / ".kube" / "cache")
        return Discovery(self.client, cache_directory(root, self.rest_config.host))

    @cached_property
    def mapper(self) -> RESTMapper:
        from minikube_py.mkctl.discovery import RESTMapper

        return RESTMapper(self.discovery, self.warn)

    def close(self) -> None:
        if "client" in self.__dict__:
            self.client.close()

    # -- output --

    def warn(self, message: str) -> None:
        """A warning as kubectl's warning printer writes it."""
        self.err.write(f"Warning: {message}\n")

    def usage_error(self, message: str) -> UsageError:
        return UsageError(message, self.path)
