"""mkctl's entry point: find the command, parse the flags, run it, report its failure.

    mkctl [global flags] COMMAND [SUBCOMMAND] [flags and arguments, in any order]

A new command is a module in commands/ that defines COMMAND (see command.py) and one
line in COMMANDS below; the module is imported only when its command runs, so each
command pays only for the imports it makes (`mkctl config current-context` never
imports the HTTP client).

Failures print as kubectl prints them and exit with its codes (errors.py): 1 for every
error, 0 after help.
"""

from __future__ import annotations

import importlib
import sys
from typing import TextIO

from minikube_py.mkctl.command import PROGRAM, Command, Invocation
from minikube_py.mkctl.errors import CommandLineError, report
from minikube_py.mkctl.flags import ARRAY, BOOL, Flag, FlagError, FlagSet

COMMANDS = {  # name -> module defining COMMAND
    "get": "minikube_py.mkctl.commands.get",
    "describe": "minikube_py.mkctl.commands.describe",
    "explain": "minikube_py.mkctl.commands.explain",
    "api-resources": "minikube_py.mkctl.commands.api_resources",
    "config": "minikube_py.mkctl.commands.config",
    "version": "minikube_py.mkctl.commands.version",
    "options": "minikube_py.mkctl.commands.options",
    "trace": "minikube_py.mkctl.commands.trace",
    "create": "minikube_py.mkctl.commands.create",
    "apply": "minikube_py.mkctl.commands.apply",
    "delete": "minikube_py.mkctl.commands.delete",
    "label": "minikube_py.mkctl.commands.label",
    "annotate": "minikube_py.mkctl.commands.annotate",
    "scale": "minikube_py.mkctl.commands.scale",
    "autoscale": "minikube_py.mkctl.commands.autoscale",
    "cordon": "minikube_py.mkctl.commands.cordon",
    "uncordon": "minikube_py.mkctl.commands.uncordon",
    "taint": "minikube_py.mkctl.commands.taint",
    "rollout": "minikube_py.mkctl.commands.rollout",
    "set": "minikube_py.mkctl.commands.set_image",
    "expose": "minikube_py.mkctl.commands.expose",
    "drain": "minikube_py.mkctl.commands.drain",
    "top": "minikube_py.mkctl.commands.top",
    "logs": "minikube_py.mkctl.commands.logs",
    "exec": "minikube_py.mkctl.commands.exec",
    "attach": "minikube_py.mkctl.commands.attach",
    "port-forward": "minikube_py.mkctl.commands.port_forward",
    "wait": "minikube_py.mkctl.commands.wait",
    "auth": "minikube_py.mkctl.commands.auth",
}
SUGGEST_FOR = {"list": "get", "ls": "get"}  # cobra's SuggestFor

GLOBAL_FLAGS = [
    Flag("as", help="Username to impersonate for the operation. User could be a regular user "
                    "or a service account in a namespace."),
    Flag("as-group", ARRAY, help="Group to impersonate for the operation, this flag can be "
                                 "repeated to specify multiple groups."),
    Flag("as-uid", help="UID to impersonate for the operation."),
    Flag("cache-dir", help="Default cache directory (default $HOME/.kube/cache)"),
    Flag("certificate-authority", help="Path to a cert file for the certificate authority"),
    Flag("client-certificate", help="Path to a client certificate file for TLS"),
    Flag("client-key", help="Path to a client key file for TLS"),
    Flag("cluster", help="The name of the kubeconfig cluster to use"),
    Flag("context", help="The name of the kubeconfig context to use"),
    Flag("insecure-skip-tls-verify", BOOL,
         help="If true, the server's certificate will not be checked for validity. This will "
              "make your HTTPS connections insecure"),
    Flag("kubeconfig", help="Path to the kubeconfig file to use for CLI requests."),
    Flag("namespace", shorthand="n", help="If present, the namespace scope for this CLI request"),
    Flag("password", help="Password for basic authentication to the API server"),
    Flag("request-timeout", default="0",
         help="The length of time to wait before giving up on a single server request. "
              "Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A "
              "value of zero means don't timeout requests."),
    Flag("server", shorthand="s", help="The address and port of the Kubernetes API server"),
    Flag("tls-server-name",
         help="Server name to use for server certificate validation. If it is not provided, "
              "the hostname used to contact the server is used"),
    Flag("token", help="Bearer token for authentication to the API server"),
    Flag("user", help="The name of the kubeconfig user to use"),
    Flag("username", help="Username for basic authentication to the API server"),
]
HELP_FLAG = Flag("help", BOOL, shorthand="h", help="help for the command")


def main() -> None:
    """The `mkctl` console script."""
    sys.exit(run(sys.argv[1:]))


def run(argv: list[str], out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run one command line; returns the exit code."""
    global_flags = FlagSet([*GLOBAL_FLAGS, HELP_FLAG])
    position = _first_argument(argv, global_flags)
    if position >= len(argv):
        out.write(_root_help())
        return 0
    name = argv[position]
    rest = argv[:position] + argv[position + 1:]
    if name not in COMMANDS:
        if argv[0].startswith("-"):  # kubectl then looks for a plugin, and refuses
            err.write(f"Error: flags cannot be placed before plugin name: {argv[0]}\n")
            return 1
        message = f'error: unknown command "{name}" for "{PROGRAM}"{_suggestions(name)}'
        err.write(message if message.endswith("\n") else message + "\n")
        return 1
    command: Command = importlib.import_module(COMMANDS[name]).COMMAND
    path = f"{PROGRAM} {name}"
    while command.subcommands:  # `config view`, `create secret generic`
        group_flags = FlagSet([*GLOBAL_FLAGS, HELP_FLAG, *command.flags])
        sub_position = _first_argument(rest, group_flags)
        subcommand = command.subcommand(rest[sub_position]) if sub_position < len(rest) else None
        if subcommand is None:
            if command.run is not None:  # `create -f`: the group runs itself
                break
            out.write(command.help(path))
            return 0
        path = f"{path} {subcommand.name}"
        rest = rest[:sub_position] + rest[sub_position + 1:]
        command = subcommand
    flag_set = FlagSet([*GLOBAL_FLAGS, HELP_FLAG, *command.flags])
    invocation = None
    try:
        try:
            parsed = flag_set.parse(rest)
        except FlagError as error:
            raise CommandLineError(str(error), path) from None
        if parsed["help"] or command.run is None:
            out.write(command.help(path))
            return 0
        invocation = Invocation(path, parsed, out, err)
        command.run(invocation)
        out.flush()
        return 0
    except BrokenPipeError:  # the reader went away (`mkctl get pods | head`): stop quietly
        if out is sys.stdout:
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # every failure is reported as kubectl reports it
        message, code = report(error)
        if message:
            out.flush()
            err.write(message if message.endswith("\n") else message + "\n")
        return code
    finally:
        if invocation is not None:
            invocation.close()


def _first_argument(argv: list[str], flags: FlagSet) -> int:
    """The position of the command's name: the first argument that is neither a flag nor
    a flag's value (cobra's stripFlags: a flag it does not know takes the next argument
    as its value, unless written `--flag=value`)."""
    position = 0
    while position < len(argv):
        arg = argv[position]
        if arg == "--" or not arg.startswith("-") or arg == "-":
            return position
        known = flags.knows(arg)
        if "=" in arg or (known and not flags.takes_value(arg)) or (
                not arg.startswith("--") and len(arg) > 2):
            position += 1
        else:
            position += 2
    return position


def _levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def _suggestions(typed: str) -> str:
    """cobra's "Did you mean this?": commands within two edits, or starting with it."""
    found = [name for name in COMMANDS
             if _levenshtein(typed.lower(), name.lower()) <= 2
             or name.lower().startswith(typed.lower())]
    if typed in SUGGEST_FOR and SUGGEST_FOR[typed] not in found:
        found.append(SUGGEST_FOR[typed])
    if not found:
        return ""
    return "\n\nDid you mean this?\n\t" + "\n\t".join(found) + "\n"


def _root_help() -> str:
    """The help of `mkctl` alone: its commands."""
    commands = {name: importlib.import_module(module).COMMAND
                for name, module in COMMANDS.items()}
    width = max(len(name) for name in commands) + 3
    lines = [f"{PROGRAM} controls a minikube-py cluster, with kubectl's commands, flags and "
             "output.", "", "Commands:"]
    lines += [f"  {name:<{width}}{command.summary}" for name, command in commands.items()]
    lines += ["", "Usage:", f"  {PROGRAM} [flags] [options]", "",
              f'Use "{PROGRAM} <command> --help" for more information about a given command.',
              f'Use "{PROGRAM} options" for a list of global command-line options (applies to '
              "all commands).", ""]
    return "\n".join(lines)
