"""`mkctl uncordon`: mark nodes schedulable again (cordon.py does the work)."""

from __future__ import annotations

from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.commands.cordon import FLAGS, set_unschedulable


def run(inv: Invocation) -> None:
    set_unschedulable(inv, False)


COMMAND = Command(
    name="uncordon",
    summary="Mark node as schedulable",
    usage="uncordon NODE [options]",
    run=run,
    flags=FLAGS,
    examples="""  # Mark node "foo" as schedulable
  mkctl uncordon foo""",
)
