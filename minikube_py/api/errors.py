"""API errors as meta/v1 Status objects, with upstream's reasons, codes and messages.

Every failure the API server reports is an `APIError`; the HTTP layer turns it into
a `Status` body with the same `code` as the HTTP status. Constructors are named after
upstream's `k8s.io/apimachinery/pkg/api/errors` helpers (NewNotFound, NewConflict, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minikube_py.api.validation import FieldError


def qualified_resource(resource: str, group: str) -> str:
    """`pods`, or `deployments.apps` for a resource in a named group."""
    return f"{resource}.{group}" if group else resource


def qualified_kind(kind: str, group: str) -> str:
    """`Pod`, or `Deployment.apps` for a kind in a named group."""
    return f"{kind}.{group}" if group else kind


@dataclass
class APIError(Exception):
    """A failed API call; `status()` is the body the client receives."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    retry_after: int | None = None

    def __str__(self) -> str:
        return self.message

    def status(self) -> dict[str, Any]:
        """The Status body, its fields in the order upstream's Go struct writes them:
        kind, apiVersion, metadata, status, message, reason, details, code (clients such
        as the official client's create_from_yaml compare the text)."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details:
            body["details"] = _ordered_details(self.details)
        body["code"] = self.code
        return body


DETAILS_ORDER = ("name", "group", "kind", "uid", "causes", "retryAfterSeconds")
"""StatusDetails' fields in the order of upstream's Go struct."""


def _ordered_details(details: dict[str, Any]) -> dict[str, Any]:
    ordered = {key: details[key] for key in DETAILS_ORDER if key in details}
    ordered.update((key, value) for key, value in details.items() if key not in ordered)
    return ordered


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    """name, group and kind, each left out when empty (Go's omitempty)."""
    details: dict[str, Any] = {"name": name} if name else {}
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def not_found(resource: str, group: str, name: str) -> APIError:
    return APIError(
        404,
        "NotFound",
        f'{qualified_resource(resource, group)} "{name}" not found',
        _details(name, group, resource),
    )


def already_exists(resource: str, group: str, name: str) -> APIError:
    return APIError(
        409,
        "AlreadyExists",
        f'{qualified_resource(resource, group)} "{name}" already exists',
        _details(name, group, resource),
    )


def conflict(resource: str, group: str, name: str, why: str) -> APIError:
    return APIError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified_resource(resource, group)} "{name}": {why}',
        _details(name, group, resource),
    )


OBJECT_MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, group: str, name: str, errors: list[FieldError]) -> APIError:
    """422 Invalid with one `details.causes` entry per field error; the message names each
    distinct error once (field.ErrorList.ToAggregate drops repeats)."""
    causes = [e.cause() for e in errors]
    distinct = list(dict.fromkeys(str(e) for e in errors))
    summary = distinct[0] if len(distinct) == 1 else "[" + ", ".join(distinct) + "]"
    details = _details(name, group, kind)
    details["causes"] = causes
    return APIError(
        422,
        "Invalid",
        f'{qualified_kind(kind, group)} "{name}" is invalid: {summary}',
        details,
    )


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def method_not_allowed() -> APIError:
    return APIError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


def resource_expired(message: str) -> APIError:
    return APIError(410, "Expired", message)


def gone(message: str) -> APIError:
    return APIError(410, "Gone", message)


def request_entity_too_large(limit: int) -> APIError:
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def unsupported_media_type(content_type: str, accepted: list[str]) -> APIError:
    return APIError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
    )


def not_acceptable(accepted: list[str]) -> APIError:
    return APIError(
        406,
        "NotAcceptable",
        f"only the following media types are accepted: {', '.join(accepted)}",
    )


def too_many_requests(retry_after: int = 1) -> APIError:
    return APIError(
        429,
        "TooManyRequests",
        "too many requests, please try again later",
        {"retryAfterSeconds": retry_after},
        retry_after=retry_after,
    )


def service_unavailable(message: str) -> APIError:
    return APIError(503, "ServiceUnavailable", message)


def timeout(message: str) -> APIError:
    return APIError(504, "Timeout", message)


def forbidden(resource: str, group: str, name: str, why: str) -> APIError:
    what = qualified_resource(resource, group)
    target = f'{what} "{name}"' if name else what
    return APIError(
        403, "Forbidden", f"{target} is forbidden: {why}", _details(name, group, resource)
    )


def internal_error(message: str) -> APIError:
    return APIError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )
