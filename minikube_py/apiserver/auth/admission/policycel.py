"""The CEL environment of ValidatingAdmissionPolicies (upstream's
k8s.io/apiserver/pkg/admission/plugin/cel): every expression sees object, oldObject,
request, params, namespaceObject, variables and authorizer, with the Kubernetes CEL
libraries. Each expression is compiled once and kept.

The authorizer library (library/authz.go) asks the server's authorizer as the request's
user, or a service account's:

    authorizer.group('apps').resource('deployments').namespace('ns').name('x')
        .check('delete').allowed()
    authorizer.path('/healthz').check('get').reason()
    authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list')
    authorizer.requestResource.check('update')     (the request's own resource)

Its values are maps here (upstream: opaque types); the authorizer is the one the
evaluating plugin set in `current_authorizer`.
"""

from __future__ import annotations

import functools
from contextvars import ContextVar
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from minikube_py.api.openapi_schema import cel_format, cel_library, cel_objects
from minikube_py.api.openapi_schema.cel import _status_text
from minikube_py.api.openapi_schema.cel_cost import Checked, activation_cost, decode
from minikube_py.apiserver.auth.authentication import UserInfo
from minikube_py.apiserver.auth.authorization import Attributes, Authorizer

NAMES = ("object", "oldObject", "request", "params", "namespaceObject", "variables",
         "authorizer", "authorizer.requestResource")
OBJECT = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
current_authorizer: ContextVar[Authorizer | None] = ContextVar("current_authorizer",
                                                                default=None)


def authorizer_value(user: UserInfo) -> dict[str, Any]:
    """The `authorizer` variable: who checks are asked for."""
    return {"user": user.name, "uid": user.uid, "groups": list(user.groups)}


def request_resource(user: UserInfo, group: str, resource: str, subresource: str,
                     namespace: str, name: str) -> dict[str, Any]:
    """The `authorizer.requestResource` variable: a check of the request's resource."""
    return {**authorizer_value(user), "group": group, "resource": resource,
            "subresource": subresource, "namespace": namespace, "name": name}


def _with(key: str) -> Any:
    return lambda value, text: {**value, key: text}


def _service_account(value: dict[str, Any], namespace: str, name: str) -> dict[str, Any]:
    return {"user": f"system:serviceaccount:{namespace}:{name}", "uid": "",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]}


def _check(value: dict[str, Any], verb: str) -> dict[str, Any]:
    """Ask the authorizer; a decision map (allowed, reason, error)."""
    authorizer = current_authorizer.get()
    if authorizer is None:
        return {"allowed": False, "reason": "", "error": "no authorizer"}
    user = UserInfo(str(value.get("user", "")), str(value.get("uid", "")),
                    tuple(value.get("groups") or ()))
    if "path" in value:
        attributes = Attributes(user, verb, False, path=str(value["path"]))
    else:
        attributes = Attributes(user, verb, True, str(value.get("group", "")),
                                str(value.get("resource", "")),
                                str(value.get("subresource", "")),
                                str(value.get("namespace", "")), str(value.get("name", "")))
    decision = authorizer.authorize(attributes)
    return {"allowed": decision.allowed, "reason": decision.reason, "error": ""}


def _authz_functions() -> list[Any]:
    """authz.go's functions, over maps."""
    def member(name: str, result: Any, params: list[Any], impl: Any) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(
            f"authz_{name}", result, [OBJECT, *params], True, impl=impl)])
    text = cel.Type.STRING
    return [
        member("path", OBJECT, [text], _with("path")),
        member("group", OBJECT, [text], _with("group")),
        member("serviceAccount", OBJECT, [text, text], _service_account),
        member("resource", OBJECT, [text], _with("resource")),
        member("subresource", OBJECT, [text], _with("subresource")),
        member("namespace", OBJECT, [text], _with("namespace")),
        member("name", OBJECT, [text], _with("name")),
        member("check", OBJECT, [text], _check),
        member("allowed", cel.Type.BOOL, [], lambda d: bool(d.get("allowed"))),
        member("reason", text, [], lambda d: str(d.get("reason", ""))),
        member("errored", cel.Type.BOOL, [], lambda d: bool(d.get("error"))),
        member("error", text, [], lambda d: str(d.get("error", ""))),
    ]


@functools.cache
def environment() -> Any:
    """The one environment every policy expression compiles in."""
    variables = {name: cel.Type.DYN for name in NAMES}
    variables["authorizer"] = variables["authorizer.requestResource"] = OBJECT
    return cel.NewEnv(variables=variables,
                      extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional(),
                                  ext_bindings.ExtBindings()],
                      functions=(cel_library.functions() + cel_objects.functions()
                                 + cel_format.functions() + _authz_functions()))


@functools.lru_cache(maxsize=4096)
def compile_expression(expression: str, want: str = "") -> tuple[Any, str]:
    """The program, or upstream's error detail ("compilation failed: ERROR: ...", "must
    evaluate to bool but got int"); `want` is "bool", "string" or "" for any type."""
    try:
        program = environment().compile(cel_format.optional_results(expression))
    except RuntimeError as error:
        return None, f"compilation failed: {_status_text(str(error))}"
    result = program.return_type()
    wanted = {"bool": cel.Type.BOOL, "string": cel.Type.STRING}.get(want)
    if wanted is not None and result != wanted and result != cel.Type.DYN:
        got = str(result).rsplit(".", 1)[-1].lower()
        return None, f"must evaluate to {want} but got {got}"
    return program, ""


@functools.lru_cache(maxsize=4096)
def _checked(expression: str, want: str) -> Checked | None:
    program, _ = compile_expression(expression, want)
    return decode(program) if program is not None else None


def call_cost(expression: str, want: str, data: dict[str, Any]) -> int:
    """The runtime cost of evaluating a compiled expression on `data` (cel_cost.py's
    estimate with the values' own sizes)."""
    checked = _checked(expression, want)
    return activation_cost(checked, data) if checked is not None else 0


def evaluate(program: Any, data: dict[str, Any]) -> tuple[Any, str]:
    """The value, or the evaluation error in cel-go's words."""
    try:
        result = program.eval(data=data)
    except RuntimeError as error:
        return None, _status_text(str(error))
    if result.type() == cel.Type.ERROR:
        return None, _status_text(str(result.value()))
    return result.value(), ""
