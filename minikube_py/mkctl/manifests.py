"""Objects from files (`-f FILE|DIR|URL|-`), as cli-runtime's Builder reads them for
create, delete, label, apply and the other commands that take -f.

    -f web.yaml           every document of the file ("---" between YAML documents, or
                          JSON objects one after another); a List's items one by one
    -f manifests/         the directory's .json, .yaml and .yml files in name order
                          (-R: its subdirectories too); other files are skipped
    -f -                  standard input, named "STDIN" in messages

The steps:
1. every path must exist before anything is read or sent ("the path ... does not exist");
2. each file is split into documents, each document decoded (a YAML error names the
   file and the line within the document, as go-yaml sees only that document);
3. each object must have apiVersion and kind (kubectl's "error validating" message);
4. its kind is mapped to a resource through discovery ("resource mapping not found");
5. its namespace: the object's own, else the command's; a namespace given with -n that
   the object contradicts is refused.
A document that fails is an error of its own; the others still go to the server. The
command reports the server's errors first, then the documents' (kubectl's StreamVisitor
returns those only when the whole stream is read). A document YAML cannot parse ends its
file.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from minikube_py.api import Obj
from minikube_py.mkctl.discovery import APIResource
from minikube_py.mkctl.errors import MkctlError, NoResourceMatch

FILE_EXTENSIONS = (".json", ".yaml", ".yml")
STDIN = "STDIN"


class Manifest(NamedTuple):
    """One object read from a file, with where it came from and where it goes."""

    source: str  # the path as given, or "STDIN"
    object: Obj
    resource: APIResource
    namespace: str  # "" for a cluster-scoped resource

    @property
    def name(self) -> str:
        return (self.object.get("metadata") or {}).get("name", "")


def expand_paths(filenames: list[str], recursive: bool) -> list[str]:
    """The files the -f arguments name, each checked to exist (step 1)."""
    found: list[str] = []
    for filename in filenames:
        if filename == "-":
            found.append(filename)
            continue
        if filename.startswith(("http://", "https://")):
            raise MkctlError(f"reading manifests from {filename}: URLs are not supported by "
                             "mkctl; download the file and pass its path")
        if not os.path.exists(filename):
            raise MkctlError(f'the path "{filename}" does not exist')
        if os.path.isdir(filename):
            found.extend(_directory_files(filename, recursive))
        else:
            found.append(filename)
    return found


def _directory_files(directory: str, recursive: bool) -> list[str]:
    """filepath.Walk's order: the entries of each directory sorted by name."""
    files = []
    for entry in sorted(os.listdir(directory)):
        path = os.path.join(directory, entry)
        if os.path.isdir(path):
            if recursive:
                files.extend(_directory_files(path, recursive))
        elif path.endswith(FILE_EXTENSIONS):
            files.append(path)
    return files


def read_documents(filename: str) -> tuple[str, Iterator[Obj | MkctlError]]:
    """A file's name as messages show it, and its objects (Lists flattened) or the error
    of each document that could not be decoded (step 2)."""
    if filename == "-":
        return STDIN, _decode(STDIN, sys.stdin.read())
    try:
        text = Path(filename).read_text(encoding="utf-8")
    except OSError as error:
        raise MkctlError(f"open {filename}: {(error.strerror or 'error').lower()}") from None
    return filename, _decode(filename, text)


def _decode(source: str, text: str) -> Iterator[Obj | MkctlError]:
    for document in _documents(source, text):
        if isinstance(document, MkctlError) or not _is_list(document):
            yield document
            continue
        yield from document.get("items") or []


def _is_list(obj: Obj) -> bool:
    return str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list)


def _documents(source: str, text: str) -> Iterator[Obj | MkctlError]:
    """YAMLOrJSONDecoder: a stream of JSON objects if it starts with "{", else YAML
    documents separated by "---" lines."""
    if text.lstrip().startswith("{"):
        decoder = json.JSONDecoder()
        rest = text.lstrip()
        while rest:
            try:
                value, end = decoder.raw_decode(rest)
            except ValueError as error:
                yield MkctlError(f"error parsing {source}: {error}")
                return
            rest = rest[end:].lstrip()
            if isinstance(value, dict):
                yield value
        return
    from minikube_py.api.goyaml.read import YAMLError, load

    for chunk in _yaml_chunks(text):
        if not chunk.strip():
            continue
        try:
            value = load(chunk)
        except YAMLError as error:
            yield MkctlError(f"error parsing {source}: error converting YAML to JSON: {error}")
            return
        if isinstance(value, dict):
            yield value
        elif value is not None:
            yield MkctlError(f"error parsing {source}: json: cannot unmarshal "
                             f"{_go_type(value)} into Go value of type map[string]interface {{}}")


def _go_type(value: Any) -> str:
    return "array" if isinstance(value, list) else "string" if isinstance(value, str) else (
        "number")


def _yaml_chunks(text: str) -> list[str]:
    """The YAML documents of a file: a line that starts with "---" separates them."""
    chunks: list[list[str]] = [[]]
    for line in text.splitlines(keepends=True):
        if line.startswith("---") and line[3:].strip() in ("",):
            chunks.append([])
        else:
            chunks[-1].append(line)
    return ["".join(chunk) for chunk in chunks]


def validate(source: str, obj: Obj) -> MkctlError | None:
    """Step 3: the object names its apiVersion and kind."""
    missing = [f"{field} not set" for field in ("apiVersion", "kind") if not obj.get(field)]
    if not missing:
        return None
    problems = missing[0] if len(missing) == 1 else "[" + ", ".join(missing) + "]"
    return MkctlError(f'error validating "{source}": error validating data: {problems}; if '
                      "you choose to ignore these errors, turn validation off with "
                      "--validate=false")


def manifests(inv: Any, filenames: list[str], recursive: bool, namespace: str,
              enforce_namespace: bool) -> Iterator[Manifest | MkctlError]:
    """Every object of the files (steps 2 to 5), or the error of each one that failed."""
    for filename in expand_paths(filenames, recursive):
        source, documents = read_documents(filename)
        for obj in documents:
            if isinstance(obj, MkctlError):
                yield obj
                continue
            problem = validate(source, obj)
            if problem is not None:
                yield problem
                continue
            yield _placed(inv, source, obj, namespace, enforce_namespace)


def _placed(inv: Any, source: str, obj: Obj, namespace: str, enforce: bool
            ) -> Manifest | MkctlError:
    """Steps 4 and 5: the object's resource, and the namespace it goes to."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        metadata = obj["metadata"] = {}
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    try:
        resource = inv.mapper.resource_for_kind(group, version, str(obj["kind"]))
    except NoResourceMatch:
        return MkctlError(
            f'resource mapping not found for name: "{metadata.get("name", "")}" namespace: '
            f'"{metadata.get("namespace", "")}" from "{source}": no matches for kind '
            f'"{obj["kind"]}" in version "{obj["apiVersion"]}"\nensure CRDs are installed '
            "first")
    if not resource.namespaced:
        return Manifest(source, obj, resource, "")
    own = metadata.get("namespace") or ""
    if own and enforce and own != namespace:
        return MkctlError(f'the namespace from the provided object "{own}" does not match '
                          f'the namespace "{namespace}". You must pass \'--namespace={own}\' '
                          "to perform this operation.")
    metadata["namespace"] = own or namespace
    return Manifest(source, obj, resource, own or namespace)
