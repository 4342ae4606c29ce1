"""Read a kubeconfig's YAML without paying for PyYAML on every command.

Kubeconfig files are written by programs (kubectl, `minikube-py up`, cloud CLIs) in plain
block style: mappings, `- ` sequences, one-line scalars, `{}` and `[]`. `load` reads
exactly that subset itself, resolving plain scalars with go-yaml's rules as kubectl does;
anything outside it (flow collections with content, block scalars, anchors, tags,
multi-line scalars, escapes in quotes, several documents) is handed to PyYAML, whose
libyaml core also produces kubectl's error messages for broken files. Importing PyYAML
costs about as much as the rest of a `mkctl get` start-up, hence the split.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api.goyaml.resolve import TIMESTAMP, resolve


class YAMLError(Exception):
    """A document go-yaml cannot parse, worded as go-yaml words it ("yaml: line 3: ...")."""


class _Unsupported(Exception):
    """Outside the subset read here: let PyYAML read the document."""


def load(text: str) -> Any:
    if text.lstrip().startswith("{"):  # a kubeconfig in JSON, which is YAML too
        import json

        try:
            return json.loads(text)
        except ValueError:
            pass
    try:
        return _BlockReader(text).read()
    except _Unsupported:
        return _load_with_pyyaml(text)


def _load_with_pyyaml(text: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 -- a safe loader
    except yaml.MarkedYAMLError as error:
        raise YAMLError(_go_yaml_message(error, yaml)) from None
    except yaml.YAMLError as error:
        raise YAMLError(f"yaml: {error}") from None


def _go_yaml_message(error: Any, yaml: Any) -> str:
    """go-yaml's parser.fail(): the problem, after the (0-based) line of its mark; a
    scanner error's line is one further."""
    line = 0
    if error.problem_mark is not None and error.problem_mark.line != 0:
        line = error.problem_mark.line + (1 if isinstance(error, yaml.scanner.ScannerError)
                                          else 0)
    elif error.context_mark is not None:
        line = error.context_mark.line
    where = f"line {line}: " if line else ""
    return f"yaml: {where}{error.problem or 'unknown problem parsing YAML content'}"


_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")


class _BlockReader:
    """A recursive reader of indented block mappings and sequences, one line at a time."""

    def __init__(self, text: str) -> None:
        self.lines: list[tuple[int, str]] = []  # (indent, content) of the lines that matter
        for raw in text.split("\n"):
            if "\t" in raw or "\r" in raw:
                raise _Unsupported
            content = raw.lstrip(" ")
            if not content or content.startswith("#"):
                continue
            if raw.startswith(("---", "...")):
                if raw.rstrip(" ") == "---" and not self.lines:
                    continue  # the explicit start of the one document
                raise _Unsupported
            self.lines.append((len(raw) - len(content), content))

    def read(self) -> Any:
        if not self.lines:
            return None
        value, index = self._block(0, self.lines[0][0])
        if index != len(self.lines):
            raise _Unsupported
        return value

    def _block(self, index: int, indent: int) -> tuple[Any, int]:
        content = self.lines[index][1]
        if content == "-" or content.startswith("- "):
            return self._sequence(index, indent)
        if _split_key(content) is None:
            if index + 1 < len(self.lines) and self.lines[index + 1][0] >= indent:
                raise _Unsupported  # a multi-line scalar, or worse
            return _scalar(content), index + 1
        return self._mapping(index, indent, content)

    def _sequence(self, index: int, indent: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        while index < len(self.lines) and self.lines[index][0] == indent:
            content = self.lines[index][1]
            if not (content == "-" or content.startswith("- ")):
                break
            rest = content[1:].lstrip(" ")
            if not rest:
                item, index = self._nested(index + 1, indent, allow_same_indent=False)
            else:
                item_indent = indent + len(content) - len(rest)
                self.lines[index] = (item_indent, rest)
                item, index = self._block(index, item_indent)
            items.append(item)
        if index < len(self.lines) and self.lines[index][0] > indent:
            raise _Unsupported
        return items, index

    def _mapping(self, index: int, indent: int, first: str) -> tuple[dict[str, Any], int]:
        mapping: dict[str, Any] = {}
        content = first
        while True:
            split = _split_key(content)
            if split is None:
                raise _Unsupported
            key, rest = split
            if rest:
                mapping[key] = _scalar(rest)
                index += 1
                if index < len(self.lines) and self.lines[index][0] > indent:
                    raise _Unsupported  # a plain scalar continued on the next line
            else:
                mapping[key], index = self._nested(index + 1, indent, allow_same_indent=True)
            if index >= len(self.lines) or self.lines[index][0] != indent:
                break
            content = self.lines[index][1]
        if index < len(self.lines) and self.lines[index][0] > indent:
            raise _Unsupported
        return mapping, index

    def _nested(self, index: int, indent: int, *, allow_same_indent: bool) -> tuple[Any, int]:
        """The value of `key:` or `-` with nothing after it: the block on the next lines,
        indented further (or, for a key, a sequence at the key's own indentation)."""
        if index < len(self.lines):
            next_indent, content = self.lines[index]
            if next_indent > indent:
                return self._block(index, next_indent)
            if allow_same_indent and next_indent == indent and (
                    content == "-" or content.startswith("- ")):
                return self._sequence(index, indent)
        return None, index


def _split_key(content: str) -> tuple[str, str] | None:
    """`key: rest` -> (key, rest), or None when the line is not a simple mapping entry."""
    if content[0] in "'\"":
        key, after = _quoted(content)
        if not _strip_comment(after.strip(" ")):
            return None  # a quoted scalar, not a key
        if not after.startswith(":") or (len(after) > 1 and after[1] != " "):
            raise _Unsupported
        return key, _strip_comment(after[1:].strip(" "))
    if _starts_with_indicator(content):
        return None
    position = content.find(": ")
    if position < 0:
        if not content.endswith(":"):
            return None
        position = len(content) - 1
    key = content[:position].rstrip(" ")
    if " #" in key or not key:
        raise _Unsupported
    tag, value = resolve(key)
    if tag != "str":
        raise _Unsupported  # a key that is not a string
    return value, _strip_comment(content[position + 1:].strip(" "))


def _starts_with_indicator(text: str) -> bool:
    """Whether a plain scalar cannot start like this (`-`, `?`, `:` only before a space)."""
    return text[0] in _INDICATORS and not (text[0] in "-?:" and text[1:2] not in ("", " "))


def _strip_comment(rest: str) -> str:
    if rest[:1] in ("'", '"'):
        return rest
    position = rest.find(" #")
    return rest[:position].rstrip(" ") if position >= 0 else rest


def _quoted(text: str) -> tuple[str, str]:
    """A one-line quoted scalar at the start of `text`: its value and what follows it."""
    quote = text[0]
    if quote == '"':
        end = text.find('"', 1)
        if end < 0 or "\\" in text[1:end]:
            raise _Unsupported
        return text[1:end], text[end + 1:]
    parts, position = [], 1
    while True:
        end = text.find("'", position)
        if end < 0:
            raise _Unsupported
        parts.append(text[position:end])
        if text[end + 1:end + 2] == "'":
            parts.append("'")
            position = end + 2
            continue
        return "".join(parts), text[end + 1:]


def _scalar(text: str) -> Any:
    """A value on the rest of a line: quoted, `{}`, `[]`, or plain (given its type)."""
    if text[0] in "'\"":
        value, after = _quoted(text)
        if _strip_comment(after.strip(" ")):
            raise _Unsupported
        return value
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if _starts_with_indicator(text):
        raise _Unsupported
    if ": " in text or text.endswith(":") or " #" in text:
        raise _Unsupported
    tag, value = resolve(text)
    return text if tag == TIMESTAMP else value
