"""Kubeconfig files: reading, merging and writing them (client-go's clientcmd loader.go,
and the clientcmd/api/v1 file format).

1. The files: `--kubeconfig` (which must exist), else each path of $KUBECONFIG (missing
   ones skipped), else ~/.kube/config.
2. Each file is decoded as Go decodes the v1 Config: unknown fields dropped, a YAML scalar
   bound for a string field read as a string, type mismatches and duplicate names
   reported in Go's words.
3. The merge (`Load`): for every cluster, user and context name, and for current-context,
   the first file that sets it wins, whole: a later file's entry of the same name is
   ignored even for fields the first one lacks.
4. Relative paths in a file (certificate-authority, client-certificate, client-key,
   tokenFile) are made relative to that file; the config commands leave them as written.

The file's own form (lists of named entries, in the Go structs' field order) is what
`config view` prints and `config use-context` writes back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from minikube_py.mkctl.errors import MkctlError
from minikube_py.mkctl.record import Record

# The v1 fields of each entry, in the order Go writes them, with their JSON types.
# (name, kind): kind is "string", "bool", "bytes" (base64 in the file), or "any".
CLUSTER_FIELDS = (("server", "string"), ("tls-server-name", "string"),
                  ("insecure-skip-tls-verify", "bool"), ("certificate-authority", "string"),
                  ("certificate-authority-data", "bytes"), ("proxy-url", "string"),
                  ("disable-compression", "bool"), ("extensions", "any"))
USER_FIELDS = (("client-certificate", "string"), ("client-certificate-data", "bytes"),
               ("client-key", "string"), ("client-key-data", "bytes"), ("token", "string"),
               ("tokenFile", "string"), ("as", "string"), ("as-uid", "string"),
               ("as-groups", "any"), ("as-user-extra", "any"), ("username", "string"),
               ("password", "string"), ("auth-provider", "any"), ("exec", "any"),
               ("extensions", "any"))
CONTEXT_FIELDS = (("cluster", "string"), ("user", "string"), ("namespace", "string"),
                  ("extensions", "any"))
# Fields written even when empty (no `omitempty` in the Go struct).
ALWAYS_WRITTEN = {"server", "cluster", "user"}
SECTIONS = (("clusters", "cluster", "Cluster", CLUSTER_FIELDS),
            ("users", "user", "AuthInfo", USER_FIELDS),
            ("contexts", "context", "Context", CONTEXT_FIELDS))

Entry = dict[str, Any]


class KubeconfigError(MkctlError):
    """A kubeconfig file that cannot be read or decoded."""


class Config(Record):
    """clientcmdapi.Config: entries by name, each a dict of its v1 fields ("bytes" fields
    decoded), plus the file it came from (LocationOfOrigin)."""

    clusters: dict[str, Entry] = {}
    users: dict[str, Entry] = {}
    contexts: dict[str, Entry] = {}
    current_context: str = ""
    preferences: dict[str, Any] = {}
    extensions: list[Any] = []
    origins: dict[tuple[str, str], str] = {}

    def section(self, name: str) -> dict[str, Entry]:
        return {"clusters": self.clusters, "users": self.users, "contexts": self.contexts}[name]


# -- reading one file --------------------------------------------------------------------

def _go_json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _mismatch(value: Any, struct: str, path: str, go_type: str) -> KubeconfigError:
    return KubeconfigError(f"json: cannot unmarshal {_go_json_type(value)} into Go struct "
                           f"field {struct}.{path} of type {go_type}")


def _scalar_string(value: Any) -> str | None:
    """sigs.k8s.io/yaml's conversion of a YAML scalar bound for a string field."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        from minikube_py.api.gofmt import format_float

        return format_float(value, "g")
    if value is None:
        return ""
    return None


def _decode_entry(raw: Any, struct: str, path: str, fields: tuple[tuple[str, str], ...]
                  ) -> Entry:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _mismatch(raw, struct, path, f"v1.{struct}")
    entry: Entry = {}
    for name, kind in fields:
        if name not in raw or raw[name] is None:
            continue
        value = raw[name]
        where = f"{path}.{name}"
        if kind in ("string", "bytes"):
            text = _scalar_string(value)
            if text is None:
                raise _mismatch(value, struct, where, "string" if kind == "string" else "[]uint8")
            if kind == "bytes":
                import binascii
                from base64 import b64decode

                try:
                    entry[name] = b64decode(text, validate=True)
                except (binascii.Error, ValueError):
                    raise KubeconfigError(f"illegal base64 data at input byte 0 in field "
                                          f"{struct}.{where}") from None
            else:
                entry[name] = text
        elif kind == "bool":
            if not isinstance(value, bool):
                raise _mismatch(value, struct, where, "bool")
            entry[name] = value
        else:
            entry[name] = value
    return entry


def decode(document: Any) -> Config:
    """clientcmd.Load: a parsed v1 document into a Config, checked as Go's JSON decoding
    checks it."""
    config = Config()
    if document is None:
        return config
    if not isinstance(document, dict):
        raise KubeconfigError(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{_go_json_type(document)} into Go value of type struct {{ APIVersion string "
            '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }')
    for section, key, struct, fields in SECTIONS:
        entries = document.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise _mismatch(entries, "Config", section, f"[]v1.Named{struct}")
        named = config.section(section)
        for item in entries:
            if not isinstance(item, dict):
                raise _mismatch(item, "Config", section, f"v1.Named{struct}")
            name = _scalar_string(item.get("name"))
            if name is None:
                raise _mismatch(item.get("name"), f"Named{struct}", f"{section}.name", "string")
            if name in named:
                raise KubeconfigError(f'error converting *[]Named{struct} into *map[string]*'
                                      f'api.{struct}: duplicate name "{name}" in list')
            named[name] = _decode_entry(item.get(key), struct, f"{section}.{key}", fields)
    current = _scalar_string(document.get("current-context"))
    if current is None:
        raise _mismatch(document.get("current-context"), "Config", "current-context",
                        "string")
    config.current_context = current
    preferences = document.get("preferences")
    if isinstance(preferences, dict):
        config.preferences = {key: preferences[key] for key in ("colors", "extensions")
                              if preferences.get(key)}
    if isinstance(document.get("extensions"), list):
        config.extensions = document["extensions"]
    return config


def load_file(path: str) -> Config:
    """LoadFromFile: one file (OSError when it cannot be read), its entries marked with
    their origin."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if not text:
        return Config()
    from minikube_py.api.goyaml.read import YAMLError, load

    try:
        config = decode(load(text))
    except YAMLError as error:
        raise KubeconfigError(str(error)) from None
    for section, _, _, _ in SECTIONS:
        for name in config.section(section):
            config.origins[(section, name)] = path
    return config


# -- the loading rules -------------------------------------------------------------------

class LoadingRules:
    """ClientConfigLoadingRules: where kubeconfig files are looked for."""

    def __init__(self, explicit_path: str = "", precedence: list[str] | None = None,
                 resolve_paths: bool = True) -> None:
        self.explicit_path = explicit_path
        self.precedence = precedence or []
        self.resolve_paths = resolve_paths

    @classmethod
    def default(cls, explicit_path: str = "", *, resolve_paths: bool = True) -> LoadingRules:
        env = os.environ.get("KUBECONFIG", "")
        if env:
            precedence = list(dict.fromkeys(env.split(os.pathsep)))
        else:
            precedence = [str(Path.home() / ".kube" / "config")]
        return cls(explicit_path, precedence, resolve_paths)

    def files(self) -> list[str]:
        """GetLoadingPrecedence."""
        return [self.explicit_path] if self.explicit_path else list(self.precedence)

    def default_filename(self) -> str:
        """GetDefaultFilename: the file new settings go to."""
        if self.explicit_path:
            return self.explicit_path
        for path in self.precedence:
            if path and os.path.exists(path):
                return path
        return self.precedence[0] if self.precedence else ""

    def load(self) -> Config:
        """Load: read every file (in order) and merge them, the first setting winning."""
        if self.explicit_path and not os.path.exists(self.explicit_path):
            raise KubeconfigError(f"stat {self.explicit_path}: no such file or directory")
        configs: list[Config] = []
        failures: list[Exception] = []
        for path in self.files():
            if not path:
                continue
            try:
                configs.append(load_file(path))
            except FileNotFoundError:
                continue
            except OSError as error:
                reason = f"open {path}: {(error.strerror or 'error').lower()}"
                failures.append(KubeconfigError(f'error loading config file "{path}": {reason}'))
            except (KubeconfigError, UnicodeDecodeError) as error:
                failures.append(KubeconfigError(f'error loading config file "{path}": {error}'))
        if failures:
            from minikube_py.mkctl.errors import Aggregate

            raise Aggregate(failures)
        merged = merge(configs)
        if self.resolve_paths:
            resolve_local_paths(merged)
        return merged


def merge(configs: list[Config]) -> Config:
    """The first file to set a name (or current-context, or a preference) wins."""
    merged = Config()
    for config in configs:
        for section, _, _, _ in SECTIONS:
            target = merged.section(section)
            for name, entry in config.section(section).items():
                if name not in target:
                    target[name] = entry
                    merged.origins[(section, name)] = config.origins.get((section, name), "")
        merged.current_context = merged.current_context or config.current_context
        for key, value in config.preferences.items():
            merged.preferences.setdefault(key, value)
        merged.extensions = merged.extensions or config.extensions
    return merged


def resolve_local_paths(config: Config) -> None:
    """ResolveLocalPaths: file references are relative to the file that holds them."""
    for section, keys in (("clusters", ("certificate-authority",)),
                          ("users", ("client-certificate", "client-key", "tokenFile"))):
        for name, entry in config.section(section).items():
            origin = config.origins.get((section, name))
            if not origin:
                continue
            base = os.path.abspath(os.path.dirname(origin))
            for key in keys:
                if entry.get(key) and not os.path.isabs(entry[key]):
                    entry[key] = os.path.normpath(os.path.join(base, entry[key]))
            command = (entry.get("exec") or {}).get("command") if section == "users" else None
            if isinstance(command, str) and "/" in command and not os.path.isabs(command):
                entry["exec"] = {**entry["exec"],
                                 "command": os.path.normpath(os.path.join(base, command))}


# -- the file's own form, for `config view` and for writing ------------------------------

def _extensions_v1(extensions: Any) -> Any:
    """NamedExtension entries in the struct's order: name, then extension."""
    if not isinstance(extensions, list):
        return extensions
    return [{"name": item.get("name", ""), "extension": item.get("extension")}
            if isinstance(item, dict) else item for item in extensions]


def _entry_v1(entry: Entry, fields: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, kind in fields:
        value = entry.get(name)
        if value in (None, "", False, b"", [], {}) and name not in ALWAYS_WRITTEN:
            continue
        if kind == "bytes":
            from base64 import b64encode

            value = b64encode(value).decode()
        elif name == "extensions":
            value = _extensions_v1(value)
        out[name] = "" if value is None else value
    return out


def to_v1(config: Config) -> dict[str, Any]:
    """The v1 Config in the Go struct's field order, entries sorted by name."""
    document: dict[str, Any] = {"kind": "Config", "apiVersion": "v1"}
    if config.preferences:
        document["preferences"] = {key: _extensions_v1(value) if key == "extensions" else value
                                   for key, value in config.preferences.items()}
    for section, key, _, fields in SECTIONS:
        entries = config.section(section)
        document[section] = [{"name": name, key: _entry_v1(entries[name], fields)}
                             for name in sorted(entries)] or None
    # The struct's order is clusters, users, contexts.
    document = {name: document[name] for name in (
        "kind", "apiVersion", "preferences", "clusters", "users", "contexts")
        if name in document}
    document["current-context"] = config.current_context
    if config.extensions:
        document["extensions"] = _extensions_v1(config.extensions)
    return document


def write_file(config: Config, path: str) -> None:
    """clientcmd.WriteToFile: the whole file rewritten in kubectl's form, mode 0600."""
    from minikube_py.api.goyaml.emit import dump

    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, mode=0o755, exist_ok=True)
    text = dump(to_v1(config))
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
