"""How crictl prints: tables, ids, ages and sizes, and the json|yaml of CRI messages
(upstream cmd/crictl/display.go and the output half of util.go, with the Go library
formats they lean on: text/tabwriter, docker/go-units, protojson, sigs.k8s.io/yaml).
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from minikube_py.api.goyaml import emit as go_yaml

TRUNCATED_ID_LEN = 13
"""Ids in tables are cut to 13 characters, as upstream's getTruncatedID."""

OUTPUT_JSON, OUTPUT_YAML, OUTPUT_TABLE = "json", "yaml", "table"

# newDefaultTableDisplay: tabwriter.NewWriter(os.Stdout, 20, 1, 3, ' ', 0)
TABLE_MIN_WIDTH = 20
TABLE_PADDING = 3

DIGEST = re.compile(r"^(sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128})$")
"""What go-digest's Parse accepts for the algorithms it knows."""


class Table:
    """display: rows of cells aligned as Go's text/tabwriter aligns them with crictl's
    settings (each column as wide as its widest cell plus 3, at least 20; the last cell
    of a row is not padded)."""

    def __init__(self) -> None:
        self.rows: list[list[str]] = []

    def add_row(self, row: list[str]) -> None:
        self.rows.append(row)

    def flush(self) -> None:
        """Write the rows. All of crictl's rows have the same cells, so they form one
        tabwriter block: one width per column."""
        if not self.rows:
            return
        widths = [max(TABLE_MIN_WIDTH, *(len(row[column]) + TABLE_PADDING
                                         for row in self.rows if column < len(row) - 1))
                  for column in range(max(len(row) for row in self.rows) - 1)]
        out = []
        for row in self.rows:
            cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell
                     for i, cell in enumerate(row)]
            out.append("".join(cells) + "\n")
        sys.stdout.write("".join(out))
        self.rows = []


def truncated_id(value: str, prefix: str = "") -> str:
    """getTruncatedID: drop the prefix (sha256:), keep 13 characters."""
    return value.removeprefix(prefix)[:TRUNCATED_ID_LEN]


def truncated_image(image: str) -> str:
    """ps's IMAGE column: an image id (a digest) is cut like an id, a name is kept."""
    if DIGEST.match(image):
        return truncated_id(image, image.split(":", 1)[0] + ":")
    return image


def human_duration(seconds: float) -> str:
    """go-units HumanDuration ("Less than a second", "2 minutes", "About an hour"...)."""
    if int(seconds) < 1:
        return "Less than a second"
    if int(seconds) == 1:
        return "1 second"
    if seconds < 60:
        return f"{int(seconds)} seconds"
    minutes = int(seconds / 60)
    if minutes == 1:
        return "About a minute"
    if minutes < 60:
        return f"{minutes} minutes"
    hours = int(seconds / 3600 + 0.5)
    if hours == 1:
        return "About an hour"
    if hours < 48:
        return f"{hours} hours"
    if hours < 24 * 7 * 2:
        return f"{hours // 24} days"
    if hours < 24 * 30 * 2:
        return f"{hours // 24 // 7} weeks"
    if hours < 24 * 365 * 2:
        return f"{hours // 24 // 30} months"
    return f"{int(seconds / 3600) // 24 // 365} years"


def ago(nanoseconds: int) -> str:
    """The CREATED column: how long ago a CRI timestamp (ns since the epoch) was."""
    return human_duration(time.time() - nanoseconds / 1e9) + " ago"


def human_size(size: float) -> str:
    """go-units HumanSizeWithPrecision(size, 3): decimal units, three digits."""
    units = ("B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB")
    index = 0
    while size >= 1000 and index < len(units) - 1:
        size /= 1000
        index += 1
    return f"{size:.3g}{units[index]}"


def rfc3339_nano(nanoseconds: int) -> str:
    """time.Unix(0, ns).Format(time.RFC3339Nano), in the local zone: fraction without
    trailing zeros, "Z" for UTC."""
    moment = _local_time(nanoseconds)
    fraction = f"{nanoseconds % 10**9:09d}".rstrip("0")
    return (moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "")
            + _zone(moment, rfc3339=True))


def go_time_string(nanoseconds: int) -> str:
    """A time.Time printed with %v: "2006-01-02 15:04:05.999999999 -0700 MST"."""
    moment = _local_time(nanoseconds)
    fraction = f"{nanoseconds % 10**9:09d}".rstrip("0")
    return (moment.strftime("%Y-%m-%d %H:%M:%S") + (f".{fraction}" if fraction else "")
            + " " + _zone(moment, rfc3339=False) + " " + (moment.tzname() or ""))


ZERO_TIME = "0001-01-01T00:00:00Z"
"""time.Time{} formatted as RFC3339Nano: a start or finish that has not happened."""


def _local_time(nanoseconds: int) -> datetime:
    return datetime.fromtimestamp(nanoseconds // 10**9, UTC).astimezone()


def _zone(moment: datetime, *, rfc3339: bool) -> str:
    offset = moment.utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset is not None else 0
    if rfc3339 and minutes == 0:
        return "Z"
    sign = "-" if minutes < 0 else "+"
    hours, rest = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{rest:02d}" if rfc3339 else f"{sign}{hours:02d}{rest:02d}"


def go_map(values: Mapping[str, str]) -> str:
    """A map[string]string printed with %v: map[key:value ...], keys sorted."""
    return "map[" + " ".join(f"{key}:{values[key]}" for key in sorted(values)) + "]"


def proto_json(message: Message) -> str:
    """protojson with EmitDefaultValues and a two-space indent (protobufObjectToJSON)."""
    return json_format.MessageToJson(message, indent=2, ensure_ascii=False,
                                     always_print_fields_with_no_presence=True)


def proto_dict(message: Message) -> dict[str, Any]:
    """The same fields as proto_json, as a dict."""
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def go_json(value: Any) -> str:
    """encoding/json's Marshal then json.Indent(2): keys sorted, <, > and & escaped."""
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    for char, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def json_to_yaml(value: Any) -> str:
    """yaml.JSONToYAML: the same data as YAML, written by go-yaml v2."""
    return go_yaml.dump(value)


def print_message(message: Message, output: str) -> None:
    """outputProtobufObjAsJSON / outputProtobufObjAsYAML, each ended by Println."""
    if output == OUTPUT_JSON:
        print(proto_json(message))
    else:
        print(json_to_yaml(json.loads(proto_json(message))))


def print_statuses(statuses: list[dict[str, Any]], output: str) -> None:
    """outputStatusData: one object per status, bare when there is one, a list else."""
    if not statuses:
        return
    result: Any = statuses[0] if len(statuses) == 1 else statuses
    if output == OUTPUT_YAML:
        print(json_to_yaml(json.loads(go_json(result))))
    elif output == OUTPUT_JSON:
        print(go_json(result))
    else:
        raise ValueError(f'unsupported format: "{output}"')


def status_data(status: dict[str, Any], info: Mapping[str, str]) -> dict[str, Any]:
    """One entry of outputStatusData: the status, then each verbose info key, a JSON
    object parsed and anything else as a string without its quotes."""
    data: dict[str, Any] = {"status": status}
    for key in sorted(info):
        value = info[key]
        data[key] = json.loads(value) if value.startswith("{") else value.strip('"')
    return data
