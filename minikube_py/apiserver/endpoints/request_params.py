"""Reading a request: query parameters, the body, and what the client asked to get back.

Upstream spreads these over k8s.io/apiserver/pkg/endpoints/handlers (rest.go, create.go,
delete.go, patch.go) and the decoders: list options (selectors, limit, continue,
resourceVersion), the body decoded and checked against the URL's kind, `fieldValidation`,
`dryRun`, `fieldManager` and `force`, and DeleteOptions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from minikube_py.api import Obj, errors, meta
from minikube_py.api.resources import Resource, by_kind
from minikube_py.api.schema import schema_for, unknown_fields
from minikube_py.api.schema.strict import (
    FieldPath,
    decodes_cleanly,
    drop_null_fields,
    type_error,
)
from minikube_py.api.selectors import SelectorError, parse_field_selector, parse_label_selector
from minikube_py.api.validation import FieldError, forbidden, invalid, required, too_long
from minikube_py.apiserver.endpoints import negotiation
from minikube_py.apiserver.registry.store import DeleteOptions, ListOptions, Store


def query_int(request: web.Request, name: str) -> int | None:
    value = request.query.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise errors.bad_request(f"invalid value for {name}: {value!r}") from None


def list_options(request: web.Request) -> ListOptions:
    try:
        labels = parse_label_selector(request.query.get("labelSelector", ""))
    except SelectorError as err:
        raise errors.bad_request(f"unable to parse requirement: {err}") from None
    try:
        fields = parse_field_selector(request.query.get("fieldSelector", ""))
    except SelectorError as err:
        raise errors.bad_request(str(err)) from None
    limit = query_int(request, "limit") or 0
    if limit < 0:
        raise errors.bad_request(f"limit must be non-negative, got {limit}")
    resource_version = request.query.get("resourceVersion", "")
    if resource_version not in ("", "0"):
        try:
            if int(resource_version) < 0:
                raise ValueError
        except ValueError:
            raise errors.bad_request(f"invalid resource version: {resource_version!r}") from None
    match = request.query.get("resourceVersionMatch", "")
    if match and match not in ("Exact", "NotOlderThan"):
        raise errors.bad_request(f"unsupported resourceVersionMatch: {match!r}")
    send_initial = request.query.get("sendInitialEvents", "").lower() in ("1", "true")
    if match and resource_version == "" and not send_initial:
        raise errors.bad_request(
            "resourceVersionMatch is forbidden unless resourceVersion is provided"
        )
    return ListOptions(
        labels, fields, limit, request.query.get("continue", ""), resource_version, match
    )


def check_field_labels(store: Store, options: ListOptions) -> None:
    for name in sorted(options.field_selector.fields()):
        if name not in store.strategy.field_labels:
            raise errors.bad_request(f"field label not supported: {name}")


def object_filter(
    store: Store, namespace: str, options: ListOptions
) -> Callable[[Obj], bool] | None:
    labels, fields = options.label_selector, options.field_selector
    if not namespace and labels.empty() and fields.empty():
        return None

    def matches(obj: Obj) -> bool:
        if namespace and (obj.get("metadata") or {}).get("namespace") != namespace:
            return False
        if not labels.empty() and not labels.matches(meta.labels_of(obj)):
            return False
        return fields.empty() or fields.matches(store.strategy.field_set(obj))

    return matches


async def read_object(request: web.Request, resource: Resource | None, kind: str,
                      api_version: str, also_served: tuple[str, ...] = ()) -> Obj:
    """The body as an object of `kind` in `api_version` (or in one of `also_served`, the
    other versions a subresource accepts as they are)."""
    body = await request.read()
    try:
        obj = negotiation.decode_body(request.headers.get("Content-Type", ""), body)
        if not isinstance(obj, dict):
            raise errors.bad_request(
                "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{json_type(obj)} into Go value of type struct {{ APIVersion string; "
                "Kind string }"
            )
    except errors.APIError as err:
        if err.code != 400:
            raise
        # Upstream's transformDecodeError: the body named no kind we could read.
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {kind}): {err.message} "
            f"({summarize_body(body)})"
        ) from None
    if obj.get("apiVersion") in also_served:
        api_version = obj["apiVersion"]
    check_type(obj, kind, api_version)
    return obj


def check_name_and_namespace(obj: Obj, *, name: str | None, namespace: str,
                             namespaced: bool, name_required: bool = False) -> None:
    """checkName and EnsureObjectNamespaceMatchesRequestNamespace, the one check of every
    write: a name in the body is the URL's (`name`; None: the URL has none), and so is a
    namespace; a cluster-scoped object's namespace is dropped."""
    metadata = obj.setdefault("metadata", {})
    given = metadata.get("name")
    if name is not None and given != name and (name_required or given not in (None, "")):
        raise errors.bad_request(
            f"the name of the object ({given}) does not match the name on the URL ({name})")
    if not namespaced:
        metadata.pop("namespace", None)
    elif metadata.get("namespace") not in (None, "", namespace):
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the "
            "request")


def check_type(obj: Obj, kind: str, api_version: str) -> None:
    """The body's kind/apiVersion must match the URL (filled in when absent).

    Upstream decodes the body as the type it names and then fails to convert it (or
    finds no such type); transformDecodeError reports either as a 400.
    """
    for field in ("apiVersion", "kind"):
        value = obj.get(field)
        if value is not None and not isinstance(value, str):
            raise errors.bad_request(
                "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{json_type(value)} into Go struct field .{field} of type string")
    body_kind = obj.get("kind") or kind
    body_version = obj.get("apiVersion") or api_version
    if (body_kind, body_version) != (kind, api_version):
        version = body_version.rsplit("/", 1)[-1]
        if by_kind(body_version, body_kind) is not None:
            group = api_version.split("/")[0].split(".")[0] if "/" in api_version else "core"
            why = f"converting ({version}.{body_kind}) to ({group}.{kind}): unknown conversion"
        else:
            why = (
                f'no kind "{body_kind}" is registered for version "{body_version}" in '
                'scheme "pkg/api/legacyscheme/scheme.go:30"'
            )
        raise errors.bad_request(
            f'{body_kind} in version "{version}" cannot be handled as a {kind}: {why}'
        )
    # apiVersion and kind first, as kubectl prints objects and etcdctl shows them.
    rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    obj.clear()
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    obj.update(rest)
    if "metadata" in obj and obj["metadata"] is None:
        del obj["metadata"]  # a null metadata decodes as an empty ObjectMeta
    if "metadata" in obj and not isinstance(obj["metadata"], dict):
        raise errors.bad_request(
            "json: cannot unmarshal into Go struct field .metadata of type v1.ObjectMeta"
        )


# ValidateFieldManager: a manager name is at most 128 bytes of printable characters.
FIELD_MANAGER_MAX_LENGTH = 128


@dataclass
class PatchOptions:
    """The PatchOptions of a request: who is writing, and whether an apply forces."""

    field_manager: str
    force: bool


def validate_field_manager(name: str) -> list[FieldError]:
    """ValidateFieldManager: length and printable characters."""
    problems = []
    if len(name.encode()) > FIELD_MANAGER_MAX_LENGTH:
        problems.append(too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH))
    problems += [invalid("fieldManager", name, f"invalid character U+{ord(c):04X}")
                 for c in name if not c.isprintable()]
    return problems


def prefix_from_user_agent(user_agent: str) -> str:
    """The default field manager: the User-Agent up to its first "/" ("kubectl")."""
    prefix = "".join(c for c in user_agent.split("/", 1)[0] if c.isprintable())
    while len(prefix.encode()) > FIELD_MANAGER_MAX_LENGTH:
        prefix = prefix[:-1]
    return prefix


def field_manager(request: web.Request, options_kind: str) -> str:
    """fieldManager of a create or update (CreateOptions/UpdateOptions), or its default."""
    name = request.query.get("fieldManager", "")
    problems = validate_field_manager(name)
    if problems:
        raise errors.invalid(options_kind, "meta.k8s.io", "", problems)
    return name or prefix_from_user_agent(request.headers.get("User-Agent", ""))


def patch_options(request: web.Request, apply: bool) -> PatchOptions:
    """PatchOptions, checked as ValidatePatchOptions does: an apply needs a fieldManager,
    and only an apply may say `force`."""
    name = request.query.get("fieldManager", "")
    force = request.query.get("force")
    problems = []
    if not apply and force is not None:
        problems.append(forbidden("force", "may not be specified for non-apply patch"))
    if apply and not name:
        problems.append(required("fieldManager", "is required for apply patch"))
    problems += validate_field_manager(name)
    if problems:
        raise errors.invalid("PatchOptions", "meta.k8s.io", "", problems)
    if force not in (None, "", "true", "false", "1", "0", "True", "False"):
        raise errors.bad_request(f'strconv.ParseBool: parsing "{force}": invalid syntax')
    return PatchOptions(name or prefix_from_user_agent(request.headers.get("User-Agent", "")),
                        force in ("true", "1", "True"))


def field_validation_mode(request: web.Request) -> str:
    """The fieldValidation directive: Strict, Warn (the default) or Ignore."""
    mode = request.query.get("fieldValidation", "Warn")
    if mode not in ("Strict", "Warn", "Ignore"):
        raise errors.bad_request(
            f"fieldValidation parameter unsupported: {mode!r}; must be one of Ignore, Warn, Strict"
        )
    return mode


def field_validation(
    request: web.Request,
    resource: Resource,
    obj: Obj,
    kind: str = "",
    group: str | None = None,
    version: str = "",
) -> list[str]:
    """Decode into the kind's schema: a wrong JSON type is a 400, a field sent as null is
    dropped (Go's decoder reads it as absent); fieldValidation: Strict rejects unknown
    fields, Warn (default) and Ignore drop them."""
    mode = field_validation_mode(request)
    schema = schema_for(
        group if group is not None else resource.group,
        version or resource.version,
        kind or resource.kind,
    )
    if schema is None:
        return []
    if decodes_cleanly(obj, schema):
        return []
    kind_name = kind or resource.kind
    wrong_type = type_error(obj, schema)
    if wrong_type is not None:
        raise errors.bad_request(
            f'{kind_name} in version "{version or resource.version}" cannot be handled as a '
            f"{kind_name}: {wrong_type}")
    drop_null_fields(obj, schema)
    unknown = unknown_fields(obj, schema)
    if not unknown:
        return []
    if mode == "Strict":
        _refuse_unknown(kind_name, version or resource.version,
                        [str(path) for path in unknown])
    for path in unknown:
        drop_path(obj, path)
    if mode == "Ignore":
        return []
    return [f'unknown field "{path}"' for path in unknown]


def _refuse_unknown(kind: str, version: str, paths: list[str]) -> None:
    """fieldValidation=Strict: the strict decoding error naming every unknown field."""
    listed = ", ".join(f'unknown field "{path}"' for path in paths)
    raise errors.bad_request(
        f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding '
        f"error: {listed}")


def store_field_validation(request: web.Request, store: Store, obj: Obj) -> list[str]:
    """field_validation of a body of the store's own kind. A kind whose schema is data
    (a custom resource) prunes what its schema does not know, and fieldValidation says
    whether that is an error (Strict), a warning (Warn) or nothing (Ignore)."""
    pruned = store.strategy.prune_unknown_fields(obj)
    if pruned is None:
        return field_validation(request, store.resource, obj)
    mode = field_validation_mode(request)
    if not pruned or mode == "Ignore":
        return []
    if mode == "Strict":
        _refuse_unknown(store.resource.kind, store.resource.version, pruned)
    return [f'unknown field "{path}"' for path in pruned]


def dry_run(request: web.Request) -> bool:
    values = request.query.getall("dryRun", [])
    for value in values:
        if value != "All":
            raise errors.bad_request(f"Invalid dry run value: {value!r}; must be All")
    return bool(values)


async def delete_options(request: web.Request) -> DeleteOptions:
    """The DeleteOptions of a DELETE: its body, if any, then the query's parameters."""
    body = await request.read()
    parsed = None
    if body.strip():
        parsed = negotiation.decode_body(request.headers.get("Content-Type", ""), body)
        if not isinstance(parsed, dict):
            raise errors.bad_request("the body of a delete must be a DeleteOptions object")
    return delete_options_from(parsed, request)


def delete_options_from(parsed: Obj | None, request: web.Request) -> DeleteOptions:
    """DeleteOptions from a decoded body (a DELETE's, or an Eviction's deleteOptions) and
    the request's query, checked as upstream validates them."""
    options = DeleteOptions()
    if parsed is not None:
        kind = parsed.get("kind")
        if kind not in (None, "", "DeleteOptions"):
            raise errors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind (DeleteOptions)"
            )
        options.grace_period_seconds = parsed.get("gracePeriodSeconds")
        options.propagation_policy = parsed.get("propagationPolicy")
        orphan = parsed.get("orphanDependents")
        if orphan is not None and not options.propagation_policy:
            options.propagation_policy = "Orphan" if orphan is True else "Background"
        options.preconditions = parsed.get("preconditions") or {}
        options.dry_run = bool(parsed.get("dryRun"))
    grace = query_int(request, "gracePeriodSeconds")
    if grace is not None:
        options.grace_period_seconds = grace
    policy = request.query.get("propagationPolicy")
    if policy:
        options.propagation_policy = policy
    if options.propagation_policy not in (None, "Orphan", "Background", "Foreground"):
        raise errors.APIError(
            422,
            "Invalid",
            f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
            f'"{options.propagation_policy}": supported values: "Foreground", "Background", '
            f'"Orphan", "nil"',
        )
    if options.grace_period_seconds is not None and (
        not isinstance(options.grace_period_seconds, int) or options.grace_period_seconds < 0
    ):
        raise errors.APIError(
            422,
            "Invalid",
            'DeleteOptions.meta.k8s.io "" is invalid: gracePeriodSeconds: Invalid value: '
            f"{options.grace_period_seconds}: must be greater than or equal to 0",
        )
    options.dry_run = options.dry_run or dry_run(request)
    return options


def json_type(value: Any) -> str:
    """How Go's encoding/json names a JSON value's type in its unmarshal errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {list: "array", str: "string"}.get(type(value), "null")


def summarize_body(body: bytes, limit: int = 30) -> str:
    """A short view of a body for error messages: JSON objects as text, anything else as hex."""
    if not body:
        return "<empty>"
    text = body[:limit].decode("utf-8", "replace") if body[:1] == b"{" else body[:limit].hex()
    return text + " ..." if len(body) > limit else text


def drop_path(obj: Any, path: FieldPath) -> None:
    """Remove the field at an unknown field's path (unknown-field pruning)."""
    target = obj
    for step in path.steps[:-1]:
        try:
            target = target[step]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(target, dict):
        target.pop(path.steps[-1], None)
