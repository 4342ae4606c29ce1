"""Errors, and how kubectl prints them (k8s.io/kubectl/pkg/cmd/util: CheckErr).

Every failure of a command is one of the exceptions below; `cli.main` turns it into
kubectl's message and exit code with `report`:

    Error from server (NotFound): pods "x" not found        a Status from the server
    error: You must be logged in to the server (Unauthorized)
    error: the server doesn't have a resource type "foo"    no such resource in discovery
    The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?
    Unable to connect to the server: <cause>                 any other transport failure
    Error in configuration: context was not found for specified context: x
    error: <anything else>

Several errors (`get pod a b` with both missing) print one line each.
"""

from __future__ import annotations

from typing import Any

DEFAULT_EXIT_CODE = 1


class MkctlError(Exception):
    """A failure kubectl reports as "error: <message>"."""

    def message(self) -> str:
        text = str(self)
        return text if text.startswith("error: ") else f"error: {text}"


class UsageError(MkctlError):
    """A command used wrongly: the message, then "See 'mkctl get -h' for help and examples"."""

    def __init__(self, text: str, command_path: str) -> None:
        super().__init__(f"{text}\nSee '{command_path} -h' for help and examples")


class CommandLineError(MkctlError):
    """A flag pflag rejects: the message, then "See 'mkctl get --help' for usage."."""

    def __init__(self, text: str, command_path: str) -> None:
        super().__init__(f"{text}\nSee '{command_path} --help' for usage.")


class StatusError(MkctlError):
    """The API server answered with a failure Status (metav1.Status)."""

    def __init__(self, status: dict[str, Any]) -> None:
        self.status = status
        super().__init__(status.get("message", ""))

    @property
    def reason(self) -> str:
        return self.status.get("reason", "")

    @property
    def code(self) -> int:
        return int(self.status.get("code") or 0)

    def message(self) -> str:
        """StandardErrorMessage for an APIStatus."""
        if self.reason == "Unauthorized":
            return f"error: You must be logged in to the server ({self})"
        if self.reason == "Invalid" and self.status.get("details"):
            return self._invalid()
        if self.reason:
            return f"Error from server ({self.reason}): {self}"
        return f"Error from server: {self}"


    def _invalid(self) -> str:
        """checkErr's wording of an Invalid object: `The ConfigMap "x" is invalid: ` and
        each cause as `field: message` (several on lines of their own)."""
        details = self.status["details"]
        head = "The request is invalid"
        if details.get("kind") or details.get("name"):
            head = f'The {details.get("kind", "")} "{details.get("name", "")}" is invalid'
        causes = list(dict.fromkeys(  # an aggregate of errors prints each message once
            f'{cause.get("field", "")}: {cause.get("message", "")}'
            for cause in details.get("causes") or []))
        if not causes:
            return head
        if len(causes) == 1:
            return f"{head}: {causes[0]}"
        return f"{head}: \n" + "\n".join(f"* {cause}" for cause in causes)


class ConnectionFailed(MkctlError):
    """The request never got an HTTP answer (Go's *url.Error).

    `url` is what was asked for and `cause` Go's wording of why, as in
    `Get "https://127.0.0.1:6443/api?timeout=32s": dial tcp 127.0.0.1:6443: connect:
    connection refused`."""

    def __init__(self, method: str, url: str, host: str, cause: str) -> None:
        self.method = method
        self.url = url
        self.host = host
        self.cause = cause
        self.during_discovery = False  # kubectl logs each failed discovery attempt too
        self.retried = False  # failed again when retried: client-go wraps, kubectl prints raw
        super().__init__(f'{method} "{url}": {cause}')

    def message(self) -> str:
        if self.retried:
            return str(self)
        if "connection refused" in self.cause:
            return (f"The connection to the server {self.host} was refused - did you specify "
                    "the right host or port?")
        return f"Unable to connect to the server: {self.cause}"


class NoResourceMatch(MkctlError):
    """Discovery knows no resource by that name (meta.NoResourceMatchError)."""

    def __init__(self, resource: str, group: str = "", version: str = "") -> None:
        self.resource, self.group, self.version = resource, group, version
        super().__init__(resource)

    def message(self) -> str:
        text = f'error: the server doesn\'t have a resource type "{self.resource}"'
        if self.group and self.version:
            return text + f' in group "{self.group}" and version "{self.version}"'
        if self.group:
            return text + f' in group "{self.group}"'
        if self.version:
            return text + f' in version "{self.version}"'
        return text


class UnwrappedNoResourceMatch(NoResourceMatch):
    """A NoResourceMatch a command returns as the mapper made it (explain's), which
    kubectl's StandardErrorMessage prints without the "error: " prefix."""

    def message(self) -> str:
        return super().message().removeprefix("error: ")


class ContextNotFound(MkctlError):
    """A configuration error (clientcmd's errContextNotFound): "Error in configuration: ..."."""

    def __init__(self, context: str) -> None:
        super().__init__(f"context was not found for specified context: {context}")

    def message(self) -> str:
        return f"Error in configuration: {self}"


class ConfigurationInvalid(MkctlError):
    """clientcmd's errConfigurationInvalid: several problems with the chosen context."""

    def __init__(self, problems: list[Exception]) -> None:
        self.problems = problems
        super().__init__("invalid configuration: " + _aggregate_text(problems))

    def message(self) -> str:
        lines = [f"* {message_for(problem)}" for problem in self.problems]
        return "Error in configuration: \n" + "\n".join(lines)


class Aggregate(MkctlError):
    """Several errors of one command (utilerrors.Aggregate): one line each."""

    def __init__(self, errors: list[Exception]) -> None:
        self.errors = errors
        super().__init__(_aggregate_text(errors))

    def message(self) -> str:
        return "\n".join(message_for(error) for error in self.errors)


class Exit(Exception):
    """Leave with an exit code and nothing more to print (the message was printed)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _aggregate_text(errors: list[Exception]) -> str:
    """utilerrors.Aggregate's Error(): the message, or "[a, b]" for several."""
    texts = list(dict.fromkeys(str(error) for error in errors))
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def message_for(error: Exception) -> str:
    """messageForError: kubectl's standard message when there is one, else the text."""
    if isinstance(error, StatusError | ConnectionFailed):
        return error.message()
    return str(error)


def report(error: Exception) -> tuple[str, int]:
    """checkErr: the text to print on stderr and the exit code for a command's failure."""
    if isinstance(error, Aggregate) and len(error.errors) == 1:
        error = error.errors[0]
    if isinstance(error, ConfigurationInvalid) and len(error.problems) == 1:
        error = error.problems[0]
    if isinstance(error, Exit):
        return "", error.code
    if isinstance(error, MkctlError):
        return error.message(), DEFAULT_EXIT_CODE
    text = str(error)
    return (text if text.startswith("error: ") else f"error: {text}"), DEFAULT_EXIT_CODE
