"""The describer of kinds kubectl has no describer for, custom resources first
(describe.go: genericDescriber, printUnstructuredContent, smartLabelFor): the object's
fields in order, each name made a label ("apiVersion" -> "API Version"), maps and lists
indented under their name."""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.gofmt import sprint
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    describe_events,
    print_annotations_multiline,
    print_labels_multiline,
    search_events,
)
from minikube_py.mkctl.describers.writer import LEVEL_0, PrefixWriter

COMMON_ACRONYMS = ("API", "URL", "UID", "GUID")
SKIPPED = (".metadata.managedFields", ".metadata.name", ".metadata.namespace",
           ".metadata.labels", ".metadata.annotations")


def generic_describer(obj: Obj, lookups: Lookups, settings: Settings) -> str:
    meta = obj.get("metadata") or {}
    events = search_events(lookups, meta.get("namespace", ""), meta.get("name", ""),
                           obj.get("kind", ""), meta.get("uid", ""), settings)
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    print_unstructured_content(w, LEVEL_0, obj, "")
    describe_events(events, w)
    return w.tabbed()


def print_unstructured_content(w: PrefixWriter, level: int, content: Obj, skip_prefix: str
                               ) -> None:
    """printUnstructuredContent: fields sorted by name; a map or list under its label,
    one level deeper; anything else as `Label:<tab>value`."""
    for field in sorted(content):
        value = content[field]
        path = f"{skip_prefix}.{field}"
        if path in SKIPPED:
            continue
        if isinstance(value, dict):
            w.write(level, f"{smart_label_for(field)}:\n")
            print_unstructured_content(w, level + 1, value, path)
        elif isinstance(value, list):
            w.write(level, f"{smart_label_for(field)}:\n")
            for child in value:
                if isinstance(child, dict):
                    print_unstructured_content(w, level + 1, child, path)
                else:
                    w.write(level + 1, f"{sprint(child)}\n")
        else:
            w.write(level, f"{smart_label_for(field)}:\t{sprint(value)}\n")


def _char_class(char: str) -> int:
    if char.islower():
        return 1
    if char.isupper():
        return 2
    if char.isdigit():
        return 3
    return 4


def camelcase_split(text: str) -> list[str]:
    """fatih/camelcase.Split: runs of one character class, an upper-case letter that
    starts a lower-case run moved into it ("PDFLoader" -> "PDF", "Loader")."""
    runs: list[str] = []
    last = 0
    for char in text:
        kind = _char_class(char)
        if runs and kind == last:
            runs[-1] += char
        else:
            runs.append(char)
        last = kind
    for i in range(len(runs) - 1):
        if runs[i] and runs[i][0].isupper() and runs[i + 1][0].islower():
            runs[i + 1] = runs[i][-1] + runs[i + 1]
            runs[i] = runs[i][:-1]
    return [run for run in runs if run]


def smart_label_for(field: str) -> str:
    """smartLabelFor: "apiVersion" -> "API Version", "podIPs" -> "Pod I Ps"; a name
    with anything but letters and '-' is kept as it is."""
    if any(not (char.isalpha() or char == "-") for char in field):
        return field
    parts = camelcase_split(field)
    merged: list[str] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        if (i < len(parts) - 1 and len(part) >= 2
                and all(not c.isalpha() or c.isupper() for c in part)
                and parts[i + 1][:1].isupper()):
            merged.append(part + parts[i + 1])
            i += 2
            continue
        merged.append(part)
        i += 1
    labels = []
    for part in merged:
        if part == "_":
            continue
        if part.upper() in COMMON_ACRONYMS:
            part = part.upper()
        elif part.lower() == part:
            part = part[:1].upper() + part[1:]
        labels.append(part)
    return " ".join(labels)
