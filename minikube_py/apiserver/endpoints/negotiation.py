"""Content negotiation: what a request body is, and what shape the client wants back.

Clients say what they accept with media type parameters, e.g. kubectl get sends
`Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json`. The server
answers with the first form it can produce. Bodies come as JSON, YAML or protobuf (client-go's
typed clients); PATCH bodies name their patch type in Content-Type.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml

from minikube_py.api import errors, protobuf

JSON = "application/json"
YAML = "application/yaml"
APPLY_PATCH = "application/apply-patch+yaml"  # server-side apply (apiserver/endpoints/apply.py)
NON_APPLY_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
PATCH_TYPES = (*NON_APPLY_PATCH_TYPES, APPLY_PATCH)
BODY_TYPES = (JSON, YAML, "application/vnd.kubernetes.protobuf")


@dataclass
class MediaType:
    type: str
    params: dict[str, str] = field(default_factory=dict)


def parse_media_types(header: str) -> list[MediaType]:
    """`a/b;x=1, c/d` -> [MediaType("a/b", {"x": "1"}), MediaType("c/d")] (q values ignored)."""
    found = []
    for part in header.split(","):
        pieces = [p.strip() for p in part.split(";") if p.strip()]
        if not pieces:
            continue
        params = {}
        for piece in pieces[1:]:
            if "=" in piece:
                key, value = piece.split("=", 1)
                params[key.strip().lower()] = value.strip().strip('"')
        found.append(MediaType(pieces[0].lower(), params))
    return found


@dataclass
class Wanted:
    """The response form chosen from Accept: plain JSON/YAML, a Table, or metadata only;
    and whether the objects keep their trace context (a component asked for it)."""

    form: str = "object"  # "object" | "Table" | "PartialObjectMetadata"
    yaml: bool = False
    trace_context: bool = False


def negotiate(accept: str) -> Wanted:
    if not accept:
        return Wanted()
    types = parse_media_types(accept)
    for media in types:
        as_ = media.params.get("as")
        group = media.params.get("g")
        if media.type in (JSON, "*/*", "application/*") and as_:
            if as_ == "Table" and group == "meta.k8s.io":
                return Wanted("Table")
            if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList") and (
                group == "meta.k8s.io"
            ):
                return Wanted("PartialObjectMetadata")
            continue
        if media.type in (JSON, "*/*", "application/*", "application/json;stream=watch"):
            return Wanted()
        if media.type == YAML:
            return Wanted(yaml=True)
    raise errors.not_acceptable([JSON, YAML])


def decode_body(content_type: str, body: bytes) -> Any:
    """A create/update body as a dict: JSON, YAML or Kubernetes protobuf; anything else
    (text/plain too, as upstream) is 415."""
    media = parse_media_types(content_type or JSON)
    kind = media[0].type if media else JSON
    if kind == JSON:
        return parse_json(body)
    if kind == YAML:
        return load_yaml(body, "error converting YAML to JSON")
    if kind == protobuf.MEDIA_TYPE:
        try:
            return protobuf.decode(body)
        except protobuf.ProtobufError as err:
            raise errors.bad_request(str(err)) from None
    raise errors.unsupported_media_type(kind, [JSON, YAML, protobuf.MEDIA_TYPE])


MAX_YAML_NODES = 100_000
"""A YAML document may not stand for more nodes than this once its aliases are expanded
(a "billion laughs" document is a few lines that expand to billions)."""


# in a JSON body: a surrogate escape, or a run of 20 digits (an integer past 64 bits)
_READ_AS_YAML = re.compile(rb"\\u[dD][89a-fA-F]|[0-9]{20}")


def load_yaml(body: bytes, context: str) -> Any:
    """A YAML (or JSON) body as plain JSON values, as upstream's YAMLToJSON gives them:
    refused with a 400 when it does not parse, expands past MAX_YAML_NODES through its
    aliases, or holds what JSON cannot (strings with lone surrogates).

    A body that is JSON (what kubectl sends) is read as JSON: the same values, without
    the pure-Python YAML scanner, which takes seconds on a large CustomResourceDefinition.
    What JSON and YAML read differently goes the YAML way: `\\uD800`-style escapes (YAML
    reads no surrogate pairs) and integers too long for 64 bits (JSON makes them floats)."""
    if body.lstrip()[:1] == b"{" and not _READ_AS_YAML.search(body):
        # YAML that starts like JSON, or JSON that YAML must refuse, goes on as YAML
        with contextlib.suppress(orjson.JSONDecodeError):
            return orjson.loads(body)
    try:
        loader = yaml.SafeLoader(body)
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise errors.bad_request(f"{context}: {err}") from None
    try:
        node = loader.get_single_node()
        if node is not None and _expanded_size(node, {}) > MAX_YAML_NODES:
            raise errors.bad_request(f"{context}: yaml: document contains excessive aliasing")
        value = loader.construct_document(node) if node is not None else None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise errors.bad_request(f"{context}: {err}") from None
    finally:
        loader.dispose()
    try:
        return orjson.loads(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str))
    except (TypeError, orjson.JSONEncodeError) as err:
        raise errors.bad_request(f"{context}: {err}") from None


def yaml_duplicate_keys(body: bytes) -> list[str]:
    """The keys a YAML body sets twice in one map, as go-yaml's strict unmarshal reports
    them: `line 11: key "foo" already set in map` (lines from 1). A JSON body (what
    kubectl sends) is not scanned: the pure-Python YAML composer takes seconds on a
    large one. A body that does not parse has none: load_yaml refused it already."""
    if body.lstrip()[:1] in (b"{", b"["):
        return []
    try:
        node = yaml.compose(body, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, UnicodeDecodeError):
        return []
    found: list[tuple[int, str]] = []
    stack = [node] if node is not None else []
    seen_nodes: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in seen_nodes:
            continue
        seen_nodes.add(id(current))
        if isinstance(current, yaml.MappingNode):
            keys: set[Any] = set()
            for key, value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in keys:
                        line = key.start_mark.line + 1
                        shown = orjson.dumps(key.value).decode() if key.tag.endswith(
                            ":str") else key.value
                        found.append((line, f"line {line}: key {shown} already set in map"))
                    keys.add(key.value)
                stack.append(value)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
    return [text for _, text in sorted(found)]


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many nodes `node` stands for with every alias expanded (each shared node is
    counted once per use, computed once)."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = 1  # a node that contains itself: count the cycle once
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(key, sizes) + _expanded_size(value, sizes)
                       for key, value in node.value)
    else:
        size = 1
    sizes[id(node)] = size
    return size


def parse_json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as err:
        snippet = body[:120].decode("utf-8", "replace")
        raise errors.bad_request(
            f"couldn't get version/kind; json parse error: {err} (in {snippet!r})"
        ) from None


def patch_type(content_type: str, accepted: tuple[str, ...] = PATCH_TYPES) -> str:
    """The patch type a PATCH body's Content-Type names; 415 unless it is `accepted`."""
    media = parse_media_types(content_type)
    kind = media[0].type if media else ""
    if kind not in accepted:
        raise errors.unsupported_media_type(kind or "(none)", list(accepted))
    return kind
