"""Pieces every per-kind strategy uses: field paths and small checks (the readers and
defaulters of JSON fields are in api/defaulting.py).

Field paths are built as upstream's `field.Path` prints them: `spec.containers[0].name`
for list items and `spec.resources.limits[cpu]` for map keys.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict
from minikube_py.api.selectors import SelectorError, label_selector_from_dict
from minikube_py.api.validation import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
    type_invalid,
    validate_int_or_percent,
    validate_label_selector,
)

NameValidator = Callable[[str], list[str]]

MAX_INT32 = 2**31 - 1
# supportedPortProtocols: what a container, service or endpoint port may speak.
PROTOCOLS = ["SCTP", "TCP", "UDP"]


# --- field paths -------------------------------------------------------------------------


def child(path: str, *names: str) -> str:
    """`spec` + `template`, `metadata` -> `spec.template.metadata`."""
    if len(names) == 1:  # the usual case, without a list to join
        return f"{path}.{names[0]}" if path else names[0]
    return ".".join([path, *names]) if path else ".".join(names)


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, name: str) -> str:
    return f"{path}[{name}]"


# --- small validators --------------------------------------------------------------------


def as_invalid(path: str, value: Any, messages: list[str]) -> list[FieldError]:
    """One Invalid error per message of a string validator such as IsDNS1123Label."""
    return [invalid(path, value, message) for message in messages]


def required_enum(value: Any, supported: list[str], path: str) -> list[FieldError]:
    """A required enum field: Required when empty, NotSupported when unknown."""
    if not value:
        return [required(path)]
    if value not in supported:
        return [not_supported(path, value, supported)]
    return []


def one_of_errors(present: list[str], path: str, what: str) -> list[FieldError]:
    """A union (a volume's source, a probe's handler): exactly one member may be set.

    `present` lists the members that are set; `what` names the union in the messages.
    """
    if not present:
        return [required(path, f"must specify a {what} type")]
    return [
        forbidden(child(path, extra), f"may not specify more than 1 {what} type")
        for extra in present[1:]
    ]


def format_errors(validator: NameValidator, value: Any, path: str) -> list[FieldError]:
    """Run a string-format check (IsDNS1123Label, IsQualifiedName, ...) on a field.

    A value that is not a string is TypeInvalid: upstream's decoder would refuse it.
    """
    if not isinstance(value, str):
        return [type_invalid(path, value, "must be of type string")]
    return as_invalid(path, value, validator(value))


def validate_range(value: Any, low: int, high: int, path: str) -> list[FieldError]:
    """validation.InclusiveRangeError: `must be between 1 and 2147483647, inclusive`."""
    if not isinstance(value, int) or not low <= value <= high:
        return [invalid(path, value, f"must be between {low} and {high}, inclusive")]
    return []


_PORT_NAME_CHARSET = re.compile(r"^[-a-z0-9]+$")


def port_name_errors(name: str) -> list[str]:
    """validation.IsValidPortName: an IANA_SVC_NAME."""
    errors = []
    if len(name) > 15:
        errors.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.match(name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errors.append("must not begin or end with a hyphen")
    return errors


_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
CONFIG_KEY_MESSAGE = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
    "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', "
    "regex used for validation is '[-._a-zA-Z0-9]+')"
)


def config_key_errors(name: str) -> list[str]:
    """validation.IsConfigMapKey: a key of a ConfigMap or Secret (it becomes a file name)."""
    errors = []
    if len(name) > 253:
        errors.append("must be no more than 253 characters")
    if not _CONFIG_KEY.match(name):
        errors.append(CONFIG_KEY_MESSAGE)
    if name == ".":
        errors.append("must not be '.'")
    elif name == "..":
        errors.append("must not be '..'")
    elif name.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def path_segment_name(name: str) -> list[str]:
    """path.IsValidPathSegmentName: the loosest name rule (RBAC objects, core events)."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{part}'" for part in ("/", "%") if part in name]


def port_num_or_name_errors(value: Any, path: str) -> list[FieldError]:
    """ValidatePortNumOrName: an int-or-string port (targetPort, probe ports)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return [invalid(path, value, "must be an integer or a port name")]
    if isinstance(value, int):
        if not 1 <= value <= 65535:
            return [invalid(path, value, "must be between 1 and 65535, inclusive")]
        return []
    return format_errors(port_name_errors, value, path)


def ip_errors(value: Any, path: str) -> list[FieldError]:
    """validation.IsValidIP."""
    try:
        ipaddress.ip_address(value if isinstance(value, str) else "")
    except ValueError:
        return [
            invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")
        ]
    return []


def cidr_errors(value: Any, path: str) -> list[FieldError]:
    """validation.IsValidCIDR."""
    try:
        ipaddress.ip_network(value if isinstance(value, str) else "", strict=False)
    except ValueError:
        return [
            invalid(path, value, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")
        ]
    return []


def special_ip_errors(ip: str, path: str) -> list[FieldError]:
    """ValidateNonSpecialIP: no unspecified, loopback or link-local addresses."""
    address = ipaddress.ip_address(ip)
    if address.is_unspecified:
        return [invalid(path, ip, f"may not be unspecified ({ip})")]
    if address.is_loopback:
        return [invalid(path, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)")]
    if address.is_link_local:
        return [invalid(path, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")]
    if address.is_multicast and (
        address in ipaddress.ip_network("224.0.0.0/24")
        or address in ipaddress.ip_network("ff02::/16")
    ):
        return [
            invalid(
                path, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
            )
        ]
    return []


# --- int-or-percent (maxSurge, maxUnavailable, minAvailable) ----------------------------


def percent_value(value: Any) -> int | None:
    """`25%` -> 25; None for anything that is not a percent string."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]+%", value):
        return int(value[:-1])
    return None


def int_or_percent_value(value: Any) -> int:
    """getIntOrPercentValue: the number of an int or a percent (0 for anything else)."""
    percent = percent_value(value)
    if percent is not None:
        return percent
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def validate_positive_int_or_percent(value: Any, path: str) -> list[FieldError]:
    """ValidatePositiveIntOrPercent plus IsNotMoreThan100Percent."""
    errors = validate_int_or_percent(value, path)
    percent = percent_value(value)
    if percent is not None and percent > 100:
        errors.append(invalid(path, value, "must not be greater than 100%"))
    return errors


# --- selectors and pod templates -------------------------------------------------------


def selector_is_empty(selector: Obj) -> bool:
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def template_labels_match(selector: Any, template: Obj) -> bool | None:
    """Does the selector select the template's labels? None: the selector does not parse."""
    try:
        parsed = label_selector_from_dict(selector)
    except SelectorError:
        return None
    labels = as_dict(as_dict(template.get("metadata")).get("labels"))
    return parsed.empty() or parsed.matches(labels)


def validate_workload_selector(spec: Obj, path: str, kind: str) -> list[FieldError]:
    """spec.selector of a Deployment/ReplicaSet/StatefulSet: required, valid, not empty."""
    selector = spec.get("selector")
    selector_path = child(path, "selector")
    if selector is None:
        return [required(selector_path)]
    if not isinstance(selector, dict):
        return [invalid(selector_path, selector, "invalid label selector")]
    errors = validate_label_selector(selector, selector_path)
    if selector_is_empty(selector):
        errors.append(invalid(selector_path, selector, f"empty selector is invalid for {kind}"))
    return errors


SELECTOR_MISMATCH = "`selector` does not match template `labels`"


def forbid_template_deadline(template: Obj, path: str, kind: str) -> list[FieldError]:
    """Controllers restart pods forever: a deadline in their template makes no sense."""
    if as_dict(template.get("spec")).get("activeDeadlineSeconds") is not None:
        return [
            forbidden(
                child(path, "spec", "activeDeadlineSeconds"),
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        ]
    return []


# --- comparing objects -----------------------------------------------------------------


def semantic(value: Any) -> Any:
    """A copy without null fields and empty lists, which mean "unset" like absent ones.

    Upstream compares with apiequality.Semantic, for which a nil and an empty slice
    are equal; a JSON null is Go's nil.
    """
    if isinstance(value, dict):
        return {
            name: semantic(item) for name, item in value.items() if item is not None and item != []
        }
    if isinstance(value, list):
        return [semantic(item) for item in value]
    return value


# --- describing a change ----------------------------------------------------------------


def describe_changes(old: Any, new: Any, path: str) -> list[str]:
    """Lines `path: old -> new` for every leaf that differs (the diff in a Forbidden message)."""
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for name in sorted(set(old) | set(new)):
            lines.extend(describe_changes(old.get(name), new.get(name), child(path, name)))
        return lines
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        lines = []
        for i, (before, after) in enumerate(zip(old, new, strict=True)):
            lines.extend(describe_changes(before, after, index(path, i)))
        return lines
    if old == new:
        return []
    return [f"  {path}: {_show(old)} -> {_show(new)}"]


def _show(value: Any) -> str:
    if value is None:
        return "<unset>"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)
