"""The client's exceptions: one root, `ClientError`, for every call that failed.

    ClientError                   a call to the API server did not work; catch it to mean
    |                             "whatever went wrong" (log, requeue, back off)
    +-- APIStatusError            the server answered with an error Status: one class per
    |   +-- NotFound, Conflict,   reason (client-go's apimachinery errors), so controllers
    |       Invalid, ...          write `except NotFound:` as Go writes errors.IsNotFound(err)
    +-- ConnectionFailed          the server could not be reached, after the retries the
    |                             call allows
    +-- transport.TransportError  the connection pool's own failures (NotSent, Interrupted);
                                  the REST client turns them into ConnectionFailed, so only
                                  code that uses the pool directly sees them

client-go has no such root (a Status error is a *StatusError, a lost connection a
*url.Error, and Go callers test `err != nil`); in Python a caller names what it catches,
and one name keeps it from catching a pair.
"""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """A call to the API server failed: the root of the client's exceptions."""


class ConnectionFailed(ClientError):
    """The API server could not be reached (after the retries allowed for the call)."""


class APIStatusError(ClientError):
    """An error Status from the API server; `status` is the whole Status object."""

    def __init__(self, status: dict[str, Any], code: int) -> None:
        self.status = status
        self.code = code
        self.reason: str = status.get("reason", "") or ""
        self.retry_after: float | None = None
        super().__init__(status.get("message") or f"the server answered {code}")


class BadRequest(APIStatusError):
    """400 BadRequest."""


class Unauthorized(APIStatusError):
    """401 Unauthorized."""


class Forbidden(APIStatusError):
    """403 Forbidden."""


class NotFound(APIStatusError):
    """404 NotFound."""


class MethodNotAllowed(APIStatusError):
    """405 MethodNotAllowed."""


class AlreadyExists(APIStatusError):
    """409 AlreadyExists: create of a name that is taken."""


class Conflict(APIStatusError):
    """409 Conflict: the resourceVersion (or uid) precondition failed; read and retry."""


class Gone(APIStatusError):
    """410 Gone / Expired: the resourceVersion was compacted; list again."""


class Invalid(APIStatusError):
    """422 Invalid: the object failed validation; `status.details.causes` says where."""


class TooManyRequests(APIStatusError):
    """429 TooManyRequests: back off for `retry_after` seconds and try again."""


class InternalError(APIStatusError):
    """500 InternalError."""


class ServiceUnavailable(APIStatusError):
    """503 ServiceUnavailable (etcd unreachable, server shutting down)."""


class ServerTimeout(APIStatusError):
    """504 Timeout."""


_BY_REASON: dict[str, type[APIStatusError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Gone,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
    "Timeout": ServerTimeout,
}
_BY_CODE: dict[int, type[APIStatusError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    409: Conflict, 410: Gone, 422: Invalid, 429: TooManyRequests, 500: InternalError,
    503: ServiceUnavailable, 504: ServerTimeout,
}


def status_error(status: dict[str, Any], code: int) -> APIStatusError:
    """The exception for a Status body: by its reason, else by the HTTP code."""
    cls = _BY_REASON.get(status.get("reason", "")) or _BY_CODE.get(code, APIStatusError)
    return cls(status, code)
