"""Field errors and the generic validators every kind shares.

`FieldError` is upstream's `k8s.io/apimachinery/pkg/util/validation/field`. A validator
returns a list of `FieldError`; an empty list means valid. The API server turns a
non-empty list into a 422 Invalid Status whose `details.causes` holds one entry per error.

The validators below follow upstream's util/validation (name formats), api/validation
(ObjectMeta) and apis/meta/v1/validation (labels, selectors), with upstream's messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minikube_py.api.quantity import QuantityError, parse_quantity

# ErrorType -> (cause reason, message prefix), as upstream's field.ErrorType.
_ERROR_TYPES = {
    "NotFound": ("FieldValueNotFound", "Not found"),
    "Required": ("FieldValueRequired", "Required value"),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "Invalid": ("FieldValueInvalid", "Invalid value"),
    "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
    "Forbidden": ("FieldValueForbidden", "Forbidden"),
    "TooLong": ("FieldValueTooLong", "Too long"),
    "TooMany": ("FieldValueTooMany", "Too many"),
    "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value"),
}

_NO_VALUE = object()


@dataclass(frozen=True)
class GoValue:
    """A bad value already printed the way upstream's message prints it, for a Go value
    with no Python twin (a nil []byte prints as `[]byte(nil)`)."""

    text: str


def go_bytes(value: bytes | None) -> GoValue:
    """A []byte as Go's %#v prints it in a field error: []byte{0x2d, 0x2d}, or
    []byte(nil) when the field is unset."""
    if value is None:
        return GoValue("[]byte(nil)")
    return GoValue("[]byte{" + ", ".join(f"0x{byte:x}" for byte in value) + "}")


def go_json(value: Any) -> GoValue:
    """A Go slice, map or struct as a field error prints it (upstream since 1.34): its JSON,
    `null` for a nil one."""
    return GoValue(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _render_value(value: Any) -> str:
    if isinstance(value, GoValue):
        return value.text
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return go_string_slice(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass
class FieldError:
    """One problem with one field: `spec.replicas: Invalid value: -1: must be ...`."""

    type: str  # a key of _ERROR_TYPES
    field: str  # path such as "spec.containers[0].name"
    detail: str = ""
    value: Any = _NO_VALUE

    def body(self) -> str:
        """The message without the field path (what upstream puts in a cause)."""
        prefix = _ERROR_TYPES[self.type][1]
        parts = [prefix]
        if self.value is not _NO_VALUE and self.type in (
            "Invalid",
            "NotSupported",
            "Duplicate",
            "TypeInvalid",
            "NotFound",
            "TooMany",
        ):
            parts[0] = f"{prefix}: {_render_value(self.value)}"
        if self.detail:
            parts.append(self.detail)
        return ": ".join(parts)

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> dict[str, str]:
        return {"reason": _ERROR_TYPES[self.type][0], "message": self.body(), "field": self.field}


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("Required", path, detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("Invalid", path, detail, value)


def not_supported(path: str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported)
    return FieldError("NotSupported", path, detail, value)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("Forbidden", path, detail)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError("Duplicate", path, "", value)


def not_found(path: str, value: Any) -> FieldError:
    return FieldError("NotFound", path, "", value)


def too_long(path: str, max_length: int) -> FieldError:
    return FieldError("TooLong", path, f"must have at most {max_length} bytes")


def too_many(path: str, actual: int, limit: int) -> FieldError:
    """field.TooMany: `Too many: 65: must have at most 64 items`."""
    return FieldError("TooMany", path, f"must have at most {limit} items", actual)


def type_invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("TypeInvalid", path, detail, value)


def go_string_slice(values: list[str] | tuple[str, ...]) -> str:
    """A []string as upstream's messages print it (Go's %#v): []string{"a", "b"}."""
    return "[]string{" + ", ".join(json.dumps(v, ensure_ascii=False) for v in values) + "}"


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# --- Format checks (upstream util/validation and api/validate/content) -----------------
# Each returns human-readable problems; an empty list means the value is valid.

FIELD_IMMUTABLE = "field is immutable"
IS_NEGATIVE = "must be greater than or equal to 0"
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_PERCENT_FMT = "[0-9]+%"

_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT)
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
# A whole qualified name, `[prefix/]name`, in one match: the usual key needs no more.
_QUALIFIED_NAME_RE = re.compile(f"(?:{_DNS1123_SUBDOMAIN_FMT}/)?{_LABEL_KEY_FMT}")
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_PERCENT_RE = re.compile(_PERCENT_FMT)

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_PERCENT_MSG = "a valid percent string must be a numeric string followed by an ending '%'"


def _regex_error(message: str, regex: str, *examples: str) -> str:
    """validation.RegexError: the rule, examples, and the regex itself.

    Upstream's text really has two spaces before each "or": "(e.g. 'a',  or 'b', regex ...".
    """
    if not examples:
        return f"{message} (regex used for validation is '{regex}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{regex}')"


def _max_len_error(length: int, unit: str = "characters") -> str:
    # util/validation says "characters"; the newer api/validate/content (label keys and
    # values) says "bytes". Both count bytes.
    return f"must be no more than {length} {unit}"


def _too_long(value: str, limit: int) -> bool:
    return len(value.encode()) > limit


def _dns1123_subdomain_errors(value: str, unit: str) -> list[str]:
    errors = [_max_len_error(253, unit)] if _too_long(value, 253) else []
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errors.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def validate_dns1123_subdomain(value: str) -> list[str]:
    """IsDNS1123Subdomain: most object names ("my-app.example"), at most 253 bytes."""
    return _dns1123_subdomain_errors(value, "characters")


def validate_dns1123_label(value: str) -> list[str]:
    """IsDNS1123Label: namespace names and similar ("my-name"), at most 63 bytes."""
    errors = [_max_len_error(63)] if _too_long(value, 63) else []
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errors.append("must not contain dots")
        else:
            errors.append(
                _regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc")
            )
    return errors


_WILDCARD_DNS1123_SUBDOMAIN_FMT = r"\*\." + _DNS1123_SUBDOMAIN_FMT
_WILDCARD_DNS1123_SUBDOMAIN_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
    "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
    "alphanumeric character"
)


def validate_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """IsWildcardDNS1123Subdomain: `*.` and a DNS subdomain (an ingress host `*.foo.com`)."""
    errors = [_max_len_error(253)] if _too_long(value, 253) else []
    if not re.fullmatch(_WILDCARD_DNS1123_SUBDOMAIN_FMT, value):
        errors.append(_regex_error(_WILDCARD_DNS1123_SUBDOMAIN_MSG,
                                   _WILDCARD_DNS1123_SUBDOMAIN_FMT, "*.example.com"))
    return errors


_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"


def validate_domain_prefixed_path(value: str, path: str) -> list[FieldError]:
    """IsDomainPrefixedPath: `acme.io/foo`, a DNS subdomain, a slash and an HTTP path."""
    if not value:
        return [required(path)]
    host, slash, rest = value.partition("/")
    if not host or not slash or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errors = [invalid(path, host, message) for message in validate_dns1123_subdomain(host)]
    if not re.fullmatch(_HTTP_PATH_FMT, rest):
        errors.append(invalid(path, rest, _regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errors


def validate_dns1035_label(value: str) -> list[str]:
    """IsDNS1035Label: Service names; like a DNS-1123 label but must start with a letter."""
    errors = [_max_len_error(63)] if _too_long(value, 63) else []
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errors.append(_regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errors


def validate_qualified_name(value: str) -> list[str]:
    """IsQualifiedName (content.IsLabelKey): label and annotation keys, `[prefix/]name`.

    The optional prefix is a DNS subdomain; the name is at most 63 bytes of
    alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric.
    """
    if len(value) <= 63 and _QUALIFIED_NAME_RE.fullmatch(value):
        return []  # both parts well formed, and neither can be too long
    examples = ("MyName", "my.name", "123-abc")
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + m for m in _dns1123_subdomain_errors(prefix, "bytes")]
    else:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, *examples)
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif _too_long(name, 63):
        errors.append("name part " + _max_len_error(63, "bytes"))
    if not _LABEL_KEY_RE.fullmatch(name):
        errors.append("name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, *examples))
    return errors


def validate_label_value(value: str) -> list[str]:
    """IsValidLabelValue: empty, or at most 63 bytes shaped like a label key's name part."""
    errors = [_max_len_error(63, "bytes")] if _too_long(value, 63) else []
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errors


# --- Field validators (upstream api/validation and apis/meta/v1/validation) ------------
# Inputs come straight from a client's JSON, so every type is checked before use.


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _string_map_errors(value: Any, path: str) -> list[FieldError]:
    """A map of string to string, as labels and annotations are on the wire."""
    if not isinstance(value, dict):
        return [type_invalid(path, value, "must be of type object")]
    return [
        type_invalid(path, v, "must be of type string")
        for v in value.values()
        if not isinstance(v, str)
    ]


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    """ValidateLabels: every key a qualified name, every value a label value."""
    if labels is None:
        return []
    errors = _string_map_errors(labels, path)
    if errors:
        return errors
    for key, value in labels.items():
        for message in validate_qualified_name(key):
            errors.append(invalid(path, key, message))
        for message in validate_label_value(value):
            errors.append(invalid(path, value, message))
    return errors


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    """ValidateAnnotations: keys are qualified names (any case); all of it at most 256 KiB."""
    if annotations is None:
        return []
    errors = _string_map_errors(annotations, path)
    if errors:
        return errors
    for key in annotations:
        for message in validate_qualified_name(key.lower()):
            errors.append(invalid(path, key, message))
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errors.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errors


def _validate_string_field(meta: dict[str, Any], key: str, path: str) -> list[FieldError]:
    value = meta.get(key)
    if value is None or isinstance(value, str):
        return []
    return [type_invalid(_child(path, key), value, "must be of type string")]


def _group_version(api_version: str) -> tuple[str, str]:
    """schema.ParseGroupVersion: "apps/v1" -> ("apps", "v1"), "v1" -> ("", "v1")."""
    if api_version in ("", "/"):
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    return "", ""


def _validate_owner_reference(ref: dict[str, Any], path: str) -> list[FieldError]:
    """validateOwnerReference: apiVersion (with a version), kind, name and uid are set."""
    errors: list[FieldError] = []
    for key in ("apiVersion", "kind", "name", "uid"):
        if not isinstance(ref.get(key, ""), str):
            errors.append(type_invalid(_child(path, key), ref[key], "must be of type string"))
    if errors:
        return errors
    group, version = _group_version(ref.get("apiVersion", ""))
    kind = ref.get("kind", "")
    if not version:
        errors.append(
            invalid(
                _child(path, "apiVersion"), ref.get("apiVersion", ""), "version must not be empty"
            )
        )
    for key in ("kind", "name", "uid"):
        if not ref.get(key):
            errors.append(invalid(_child(path, key), ref.get(key, ""), "must not be empty"))
    if (group, version, kind) == ("", "v1", "Event"):
        errors.append(invalid(path, ref, "/v1, Kind=Event is disallowed from being an owner"))
    return errors


def validate_owner_references(refs: Any, path: str) -> list[FieldError]:
    """ValidateOwnerReferences: each reference complete, at most one with controller=true.

    As upstream, errors name the list (`metadata.ownerReferences.uid`), not an index.
    """
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [type_invalid(path, refs, "must be of type array")]
    errors: list[FieldError] = []
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            errors.append(type_invalid(path, ref, "must be of type object"))
            continue
        errors += _validate_owner_reference(ref, path)
        if ref.get("controller") is True:
            controller = f"{ref.get('kind')}/{ref.get('name')}"
            if first_controller:
                errors.append(
                    invalid(
                        path,
                        refs,
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {first_controller} and {controller}",
                    )
                )
            else:
                first_controller = controller
    return errors


def validate_finalizers(finalizers: Any, path: str) -> list[FieldError]:
    """ValidateFinalizers: qualified names; `orphan` and `foregroundDeletion` exclude each other."""
    if finalizers is None:
        return []
    if not isinstance(finalizers, list):
        return [type_invalid(path, finalizers, "must be of type array")]
    errors: list[FieldError] = []
    for finalizer in finalizers:
        if not isinstance(finalizer, str):
            errors.append(type_invalid(path, finalizer, "must be of type string"))
            continue
        errors += [invalid(path, finalizer, m) for m in validate_qualified_name(finalizer)]
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errors.append(
            invalid(path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set")
        )
    return errors


def mask_trailing_dash(name: str) -> str:
    """maskTrailingDash: "web-" validates as "wea", since a suffix will follow the dash."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def validate_object_meta(
    meta: Any,
    *,
    namespaced: bool,
    name_validator: Callable[[str], list[str]] = validate_dns1123_subdomain,
    path: str = "metadata",
) -> list[FieldError]:
    """ValidateObjectMeta: metadata on create, after any generateName was expanded.

    `name_validator` is the kind's name rule (DNS subdomain for most, DNS-1123 label
    for namespaces, DNS-1035 label for services).
    """
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return [type_invalid(path, meta, "must be of type object")]
    errors: list[FieldError] = []
    for key in ("name", "generateName", "namespace"):
        errors += _validate_string_field(meta, key, path)
    if errors:
        return errors

    generate_name = meta.get("generateName") or ""
    if generate_name:
        errors += [
            invalid(_child(path, "generateName"), generate_name, m)
            for m in name_validator(mask_trailing_dash(generate_name))
        ]
    name = meta.get("name") or ""
    if not name:
        errors.append(required(_child(path, "name"), "name or generateName is required"))
    else:
        errors += [invalid(_child(path, "name"), name, m) for m in name_validator(name)]

    namespace = meta.get("namespace") or ""
    if namespaced and not namespace:
        errors.append(required(_child(path, "namespace")))
    elif namespaced:
        errors += [
            invalid(_child(path, "namespace"), namespace, m)
            for m in validate_dns1123_label(namespace)
        ]
    elif namespace:
        errors.append(forbidden(_child(path, "namespace"), "not allowed on this type"))

    if meta.get("generation") is not None:
        errors += validate_nonnegative(meta["generation"], _child(path, "generation"))
    errors += validate_labels(meta.get("labels"), _child(path, "labels"))
    errors += validate_annotations(meta.get("annotations"), _child(path, "annotations"))
    errors += validate_owner_references(
        meta.get("ownerReferences"), _child(path, "ownerReferences")
    )
    errors += validate_finalizers(meta.get("finalizers"), _child(path, "finalizers"))
    return errors


def validate_object_meta_update(
    new_meta: dict[str, Any], old_meta: dict[str, Any], path: str = "metadata"
) -> list[FieldError]:
    """ValidateObjectMetaUpdate: identity fields stay, labels etc. stay well-formed.

    As upstream, an update must carry a resourceVersion (the store fills it in for an
    unconditional update before validating), and an object being deleted may not gain
    finalizers.
    """
    if not isinstance(new_meta, dict):
        return [type_invalid(path, new_meta, "must be of type object")]
    errors: list[FieldError] = []
    if old_meta.get("deletionTimestamp") is not None:
        new_finalizers = new_meta.get("finalizers") or []
        if isinstance(new_finalizers, list):
            old_finalizers = set(old_meta.get("finalizers") or [])
            added = sorted({f for f in new_finalizers if isinstance(f, str)} - old_finalizers)
            if added:
                errors.append(
                    forbidden(
                        _child(path, "finalizers"),
                        "no new finalizers can be added if the object is being deleted, "
                        f"found new finalizers {go_string_slice(added)}",
                    )
                )
    resource_version = new_meta.get("resourceVersion") or ""
    if not resource_version:
        errors.append(
            invalid(
                _child(path, "resourceVersion"), resource_version, "must be specified for an update"
            )
        )
    new_generation, old_generation = new_meta.get("generation", 0), old_meta.get("generation", 0)
    if _is_int(new_generation) and _is_int(old_generation) and new_generation < old_generation:
        errors.append(
            invalid(_child(path, "generation"), new_generation, "must not be decremented")
        )

    for key in ("name", "namespace", "uid"):
        errors += validate_immutable(
            new_meta.get(key, ""), old_meta.get(key, ""), _child(path, key)
        )
    for key in ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        errors += validate_immutable(new_meta.get(key), old_meta.get(key), _child(path, key))

    errors += validate_labels(new_meta.get("labels"), _child(path, "labels"))
    errors += validate_annotations(new_meta.get("annotations"), _child(path, "annotations"))
    errors += validate_owner_references(
        new_meta.get("ownerReferences"), _child(path, "ownerReferences")
    )
    return errors


_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _validate_selector_requirement(expr: Any, path: str) -> list[FieldError]:
    """ValidateLabelSelectorRequirement: operator known, values as the operator needs."""
    if not isinstance(expr, dict):
        return [type_invalid(path, expr, "must be of type object")]
    operator, key, values = expr.get("operator"), expr.get("key"), expr.get("values")
    values_path = _child(path, "values")
    if values is not None and not (
        isinstance(values, list) and all(isinstance(v, str) for v in values)
    ):
        return [type_invalid(values_path, values, "must be an array of strings")]
    values = values or []
    errors: list[FieldError] = []
    if operator in ("In", "NotIn") and not values:
        errors.append(required(values_path, "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist") and values:
        errors.append(
            forbidden(
                values_path, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
        )
    elif operator not in _SELECTOR_OPERATORS:
        errors.append(invalid(_child(path, "operator"), operator, "not a valid selector operator"))
    if not isinstance(key, str):
        errors.append(type_invalid(_child(path, "key"), key, "must be of type string"))
    else:
        errors += [invalid(_child(path, "key"), key, m) for m in validate_qualified_name(key)]
    for i, value in enumerate(values):
        errors += [invalid(f"{values_path}[{i}]", value, m) for m in validate_label_value(value)]
    return errors


def validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    """ValidateLabelSelector: a metav1.LabelSelector {matchLabels, matchExpressions}."""
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [type_invalid(path, selector, "must be of type object")]
    errors = validate_labels(selector.get("matchLabels"), _child(path, "matchLabels"))
    expressions = selector.get("matchExpressions")
    if expressions is None:
        return errors
    if not isinstance(expressions, list):
        return errors + [
            type_invalid(_child(path, "matchExpressions"), expressions, "must be of type array")
        ]
    for i, expr in enumerate(expressions):
        errors += _validate_selector_requirement(expr, f"{path}.matchExpressions[{i}]")
    return errors


def validate_immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    """ValidateImmutableField: the value may not change once set."""
    return [] if new == old else [invalid(path, new, FIELD_IMMUTABLE)]


def validate_nonnegative(value: Any, path: str) -> list[FieldError]:
    """ValidateNonnegativeField: an integer >= 0 (replicas, generation, ...)."""
    if not _is_int(value):
        return [type_invalid(path, value, "must be of type integer")]
    return [invalid(path, value, IS_NEGATIVE)] if value < 0 else []


def validate_port_number(value: Any, path: str) -> list[FieldError]:
    """IsValidPortNum: a port from 1 to 65535."""
    if not _is_int(value):
        return [type_invalid(path, value, "must be of type integer")]
    if 1 <= value <= 65535:
        return []
    return [invalid(path, value, "must be between 1 and 65535, inclusive")]


def validate_quantity(value: Any, path: str) -> list[FieldError]:
    """A resource.Quantity ("500m", "1Gi"); null is allowed, as upstream reads it as zero."""
    if value is None:
        return []
    try:
        parse_quantity(value)
    except QuantityError as err:
        return [invalid(path, value, str(err))]
    return []


def validate_int_or_percent(value: Any, path: str) -> list[FieldError]:
    """ValidatePositiveIntOrPercent: maxSurge/maxUnavailable are an int >= 0 or "NN%"."""
    if isinstance(value, str):
        if _PERCENT_RE.fullmatch(value):
            return []
        return [invalid(path, value, _regex_error(_PERCENT_MSG, _PERCENT_FMT, "1%", "93%"))]
    if _is_int(value):
        return validate_nonnegative(value, path)
    return [invalid(path, value, "must be an integer or percentage (e.g '5%')")]
