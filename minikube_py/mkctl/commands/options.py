"""`mkctl options`: the flags every command accepts (kubectl options)."""

from __future__ import annotations

from minikube_py.mkctl.command import Command, Invocation, flag_usages


def run(inv: Invocation) -> None:
    from minikube_py.mkctl.cli import GLOBAL_FLAGS

    inv.out.write("The following options can be passed to any command:\n\n"
                  + flag_usages(GLOBAL_FLAGS) + "\n")


COMMAND = Command(
    name="options",
    summary="Print the list of flags inherited by all commands",
    usage="options [flags]",
    run=run,
    examples="""  # Print flags inherited by all commands
  mkctl options""",
)
