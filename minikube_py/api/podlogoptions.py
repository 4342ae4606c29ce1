"""`PodLogOptions`: the query of a logs request (upstream's v1.PodLogOptions).

An API type: the API server's pods/log decodes and validates it, and the kubelet's
/containerLogs, which the API server calls with `to_query()`, decodes it again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from minikube_py.api import validation
from minikube_py.api.meta import rfc3339

# Values of PodLogOptions.stream and the CRI stream names each one selects.
STREAMS = {"All": (b"stdout", b"stderr"), "Stdout": (b"stdout",), "Stderr": (b"stderr",)}


@dataclass(frozen=True)
class PodLogOptions:
    """The query of a logs request (upstream's v1.PodLogOptions), shared by the API
    server's pods/log and the kubelet's /containerLogs."""

    container: str = ""
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    since_time: datetime | None = None
    tail_lines: int | None = None
    limit_bytes: int | None = None
    stream: str | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> PodLogOptions:
        """Decode query parameters; ValueError (a one-line reason) if one does not parse."""
        since_time = None
        if query.get("sinceTime"):
            try:
                since_time = datetime.fromisoformat(query["sinceTime"].replace("Z", "+00:00"))
            except ValueError:
                since_time = None
            if since_time is None or since_time.tzinfo is None:
                raise ValueError(str(validation.invalid(
                    "sinceTime", query["sinceTime"], "must be an RFC3339 time")))
        return cls(
            container=query.get("container", ""),
            follow=_query_bool(query, "follow"),
            previous=_query_bool(query, "previous"),
            timestamps=_query_bool(query, "timestamps"),
            since_seconds=_query_int(query, "sinceSeconds"),
            since_time=since_time,
            tail_lines=_query_int(query, "tailLines"),
            limit_bytes=_query_int(query, "limitBytes"),
            stream=query.get("stream") or None,
        )

    def validate(self) -> list[validation.FieldError]:
        """ValidatePodLogOptions, with upstream's messages."""
        problems = []
        if self.tail_lines is not None and self.tail_lines < 0:
            problems.append(validation.invalid(
                "tailLines", self.tail_lines, "must be greater than or equal to 0"))
        if self.limit_bytes is not None and self.limit_bytes < 1:
            problems.append(validation.invalid(
                "limitBytes", self.limit_bytes, "must be greater than 0"))
        if self.since_seconds is not None and self.since_time is not None:
            problems.append(validation.forbidden(
                "", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
        elif self.since_seconds is not None and self.since_seconds < 1:
            problems.append(validation.invalid(
                "sinceSeconds", self.since_seconds, "must be greater than 0"))
        if self.stream is not None:
            if self.stream not in STREAMS:
                problems.append(validation.not_supported("stream", self.stream, list(STREAMS)))
            elif self.stream != "All" and self.tail_lines is not None:
                problems.append(validation.forbidden(
                    "", "`tailLines` and specific `stream` are mutually exclusive for now"))
        return problems

    def to_query(self) -> dict[str, str]:
        """The kubelet's query for these options (upstream's LogLocation), container aside."""
        query = {name: "true" for name, wanted in (
            ("follow", self.follow), ("previous", self.previous),
            ("timestamps", self.timestamps)) if wanted}
        for name, number in (("sinceSeconds", self.since_seconds),
                             ("tailLines", self.tail_lines), ("limitBytes", self.limit_bytes)):
            if number is not None:
                query[name] = str(number)
        if self.since_time is not None:
            query["sinceTime"] = rfc3339(self.since_time)
        if self.stream is not None:
            query["stream"] = self.stream
        return query



def _query_bool(query: Mapping[str, str], name: str) -> bool:
    """Upstream's query booleans: absent, "false" and "0" are false, anything else true."""
    value = query.get(name)
    return value is not None and value.lower() not in ("false", "0")


def _query_int(query: Mapping[str, str], name: str) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    if not re.fullmatch(r"[+-]?[0-9]+", value):
        raise ValueError(str(validation.invalid(name, value, "must be an integer")))
    return int(value)
