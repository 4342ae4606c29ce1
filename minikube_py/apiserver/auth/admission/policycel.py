"""The CEL environment of ValidatingAdmissionPolicies (upstream's
k8s.io/apiserver/pkg/admission/plugin/cel): every expression sees object, oldObject,
request, params, namespaceObject and variables, with the Kubernetes CEL libraries.
Each expression is compiled once and kept.

`authorizer` is not declared: an expression that uses it fails to compile.
"""

from __future__ import annotations

import functools
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from minikube_py.api.openapi_schema import cel_library, cel_objects
from minikube_py.api.openapi_schema.cel import _status_text

NAMES = ("object", "oldObject", "request", "params", "namespaceObject", "variables")


@functools.cache
def environment() -> Any:
    """The one environment every policy expression compiles in."""
    return cel.NewEnv(variables={name: cel.Type.DYN for name in NAMES},
                      extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional(),
                                  ext_bindings.ExtBindings()],
                      functions=cel_library.functions() + cel_objects.functions())


@functools.lru_cache(maxsize=4096)
def compile_expression(expression: str, want: str = "") -> tuple[Any, str]:
    """The program, or upstream's error detail ("compilation failed: ERROR: ...", "must
    evaluate to bool but got int"); `want` is "bool", "string" or "" for any type."""
    try:
        program = environment().compile(expression)
    except RuntimeError as error:
        return None, f"compilation failed: {_status_text(str(error))}"
    result = program.return_type()
    wanted = {"bool": cel.Type.BOOL, "string": cel.Type.STRING}.get(want)
    if wanted is not None and result != wanted and result != cel.Type.DYN:
        got = str(result).rsplit(".", 1)[-1].lower()
        return None, f"must evaluate to {want} but got {got}"
    return program, ""


def evaluate(program: Any, data: dict[str, Any]) -> tuple[Any, str]:
    """The value, or the evaluation error in cel-go's words."""
    try:
        result = program.eval(data=data)
    except RuntimeError as error:
        return None, _status_text(str(error))
    if result.type() == cel.Type.ERROR:
        return None, _status_text(str(result.value()))
    return result.value(), ""
