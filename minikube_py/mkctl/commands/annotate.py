"""`mkctl annotate`: add, change or remove annotations (kubectl annotate).

    mkctl annotate pod web description='the front end'     pod/web annotated
    mkctl annotate pod web description='changed' --overwrite
    mkctl annotate pod web description-

The same steps as label.py on metadata.annotations, with annotate's words: every change
prints "annotated", and a value changed without --overwrite is refused with
"--overwrite is false but found the following declared annotation(s): ...".
"""

from __future__ import annotations

from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.commands.label import MapKind, common_flags, edit

ANNOTATIONS = MapKind("annotations", "annotation", "annotated", "annotated", "annotated",
                      "kubectl-annotate")


def run(inv: Invocation) -> None:
    edit(inv, ANNOTATIONS)


COMMAND = Command(
    name="annotate",
    summary="Update the annotations on a resource",
    usage="annotate [--overwrite] (-f FILENAME | TYPE NAME) KEY_1=VAL_1 ... KEY_N=VAL_N "
          "[--resource-version=version] [options]",
    run=run,
    flags=common_flags(ANNOTATIONS),
    examples="""  # Update pod 'foo' with the annotation 'description' and the value 'my frontend'
  mkctl annotate pods foo description='my frontend'

  # Update pod 'foo' by removing an annotation named 'description' if it exists
  mkctl annotate pods foo description-""",
)
