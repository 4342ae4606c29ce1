"""Which server, as whom: kubeconfig files and flags, resolved as kubectl resolves them
(client-go's tools/clientcmd).

    rules = LoadingRules.default(explicit_path=flags["kubeconfig"])
    client_config = ClientConfig(rules.load(), overrides)
    namespace, explicit = client_config.namespace()
    rest_config = client_config.rest_config()

1. The files: `--kubeconfig` (which must exist), else each path of $KUBECONFIG (missing
   ones skipped), else ~/.kube/config. Relative paths in a file (certificate-authority,
   client-certificate, client-key, tokenFile) are relative to that file.
2. The merge (`Load`): for every cluster, user and context name, and for current-context,
   the first file that sets it wins, whole: a later file's entry of the same name is
   ignored even for fields the first one lacks.
3. The overrides: `--context` picks the context; `--cluster`, `--user` and `-n` replace
   its parts; `--server`, `--token`, `--certificate-authority`, ... replace fields of the
   chosen cluster and user (a CA or --insecure-skip-tls-verify given on the command line
   replaces all of the file's TLS trust settings).
4. The checks (`ConfirmUsable`), in kubectl's words: "context was not found for specified
   context: x", "no server found for cluster "y"", ...
5. With nothing configured at all, the server is http://localhost:8080, or, inside a pod,
   the in-cluster ServiceAccount configuration.

The file's own form (clientcmd/api/v1: lists of named entries) is what `config view`
prints and `config use-context` writes back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from minikube_py.mkctl.errors import ConfigurationInvalid, ContextNotFound, MkctlError
from minikube_py.mkctl.record import Record

DEFAULT_SERVER = "http://localhost:8080"
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")

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
        from minikube_py.mkctl.gofmt import format_float

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
    from minikube_py.mkctl.goyaml.read import YAMLError, load

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


# -- the chosen context, with the command line's overrides --------------------------------

class Overrides(Record):
    """ConfigOverrides, as kubectl's global flags fill them ("" means not given)."""

    context: str = ""
    cluster: str = ""
    user: str = ""
    namespace: str = ""
    server: str = ""
    tls_server_name: str = ""
    insecure_skip_tls_verify: bool = False
    certificate_authority: str = ""
    client_certificate: str = ""
    client_key: str = ""
    token: str = ""
    username: str = ""
    password: str = ""
    impersonate: str = ""
    impersonate_uid: str = ""
    impersonate_groups: list[str] = []
    timeout: str = ""


class RestConfig(Record):
    """rest.Config: everything a request needs to reach the server as the user."""

    host: str = ""
    bearer_token: str = ""
    bearer_token_file: str = ""
    username: str = ""
    password: str = ""
    ca_file: str = ""
    ca_data: bytes = b""
    cert_file: str = ""
    cert_data: bytes = b""
    key_file: str = ""
    key_data: bytes = b""
    insecure: bool = False
    server_name: str = ""
    timeout: float = 0.0
    impersonate: str = ""
    impersonate_uid: str = ""
    impersonate_groups: list[str] = []


def parse_timeout(text: str) -> float:
    """clientcmd.ParseTimeout: whole seconds, or a Go duration ("5s", "1m30s")."""
    if text.isdigit():
        return float(text)
    from minikube_py.mkctl.gofmt import parse_duration

    seconds = parse_duration(text)
    if seconds is None:
        raise MkctlError("Invalid timeout value. Timeout must be a single integer in seconds, "
                         "or an integer followed by a corresponding time unit (e.g. 1s | 2m | "
                         "3h)")
    return seconds


def _merged(base: Entry, override: Entry) -> Entry:
    """clientcmd's merge: the override's non-empty fields replace the base's."""
    return {**base, **{key: value for key, value in override.items() if value}}


class ClientConfig:
    """DirectClientConfig (with DeferredLoadingClientConfig's in-cluster fallback)."""

    def __init__(self, config: Config, overrides: Overrides) -> None:
        self.config = config
        self.overrides = overrides

    # -- names --

    def context_name(self) -> tuple[str, bool]:
        if self.overrides.context:
            return self.overrides.context, True
        return self.config.current_context, False

    def _context(self) -> tuple[Entry, Exception | None]:
        """getContext: the chosen context with -n/--cluster/--user applied."""
        name, required = self.context_name()
        context = self.config.contexts.get(name)
        if context is None and required:
            return {}, MkctlError(f'context "{name}" does not exist')
        override = {"cluster": self.overrides.cluster, "user": self.overrides.user,
                    "namespace": self.overrides.namespace}
        return _merged(context or {}, override), None

    def _user_name(self) -> tuple[str, bool]:
        if self.overrides.user:
            return self.overrides.user, True
        return self._context()[0].get("user", ""), False

    def _cluster_name(self) -> tuple[str, bool]:
        if self.overrides.cluster:
            return self.overrides.cluster, True
        return self._context()[0].get("cluster", ""), False

    def _user(self) -> tuple[Entry, Exception | None]:
        """getAuthInfo: the chosen user with --token, --client-certificate, ... applied."""
        name, required = self._user_name()
        user = self.config.users.get(name)
        if user is None and required:
            return {}, MkctlError(f'auth info "{name}" does not exist')
        o = self.overrides
        merged = _merged(user or {}, {
            "client-certificate": o.client_certificate, "client-key": o.client_key,
            "token": o.token, "as": o.impersonate, "as-uid": o.impersonate_uid,
            "as-groups": o.impersonate_groups, "username": o.username,
            "password": o.password})
        if o.token:
            merged.pop("tokenFile", None)
        if o.client_key:
            merged.pop("client-key-data", None)
        if o.client_certificate:
            merged.pop("client-certificate-data", None)
        return merged, None

    def _cluster(self) -> tuple[Entry, Exception | None]:
        """getCluster: the chosen cluster over the defaults, with --server, ... applied."""
        name, required = self._cluster_name()
        cluster = self.config.clusters.get(name)
        if cluster is None and required:
            return {}, MkctlError(f'cluster "{name}" does not exist')
        o = self.overrides
        merged = _merged({"server": default_server()}, cluster or {})
        merged = _merged(merged, {"server": o.server, "tls-server-name": o.tls_server_name,
                                  "insecure-skip-tls-verify": o.insecure_skip_tls_verify,
                                  "certificate-authority": o.certificate_authority})
        if o.insecure_skip_tls_verify or o.certificate_authority:
            merged["insecure-skip-tls-verify"] = o.insecure_skip_tls_verify
            merged["certificate-authority"] = o.certificate_authority
            merged.pop("certificate-authority-data", None)
        if o.tls_server_name or o.server:
            merged["tls-server-name"] = o.tls_server_name
        return merged, None

    # -- checks --

    def confirm_usable(self) -> None:
        """DirectClientConfig.ConfirmUsable."""
        problems: list[Exception] = []
        name, _ = self.context_name()
        if name and name not in self.config.contexts:
            problems.append(ContextNotFound(name))
        user_name, _ = self._user_name()
        user, _ = self._user()
        problems += validate_user(user_name, user)
        cluster_name, _ = self._cluster_name()
        cluster, _ = self._cluster()
        problems += validate_cluster(cluster_name, cluster)
        if problems:
            raise ConfigurationInvalid(problems)

    # -- results --

    def namespace(self) -> tuple[str, bool]:
        """The namespace to use, and whether -n chose it."""
        if self.overrides.namespace:
            return self.overrides.namespace, True
        self.confirm_usable()
        context, error = self._context()
        if error is not None:
            raise error
        namespace = context.get("namespace", "")
        if not namespace and self._is_default() and in_cluster_possible():
            return in_cluster_namespace(), False
        return namespace or "default", False

    def rest_config(self) -> RestConfig:
        """ClientConfig(): what requests are made with."""
        user, error = self._user()
        if error is None:
            _, error = self._context()
        if error is None:
            cluster, error = self._cluster()
        if error is not None:
            raise error
        self.confirm_usable()
        if self._is_default() and in_cluster_possible():
            return in_cluster_config(self.overrides)
        config = RestConfig(host=cluster.get("server", ""))
        if self.overrides.timeout:
            config.timeout = parse_timeout(self.overrides.timeout)
        if user.get("as"):
            config.impersonate = user["as"]
            config.impersonate_uid = user.get("as-uid", "")
            config.impersonate_groups = list(user.get("as-groups") or [])
        if not config.host.lower().startswith("https://"):
            return config  # credentials only travel over TLS (IsConfigTransportTLS)
        if user.get("exec") or user.get("auth-provider"):
            raise MkctlError("mkctl does not run credential plugins (exec, auth-provider); "
                             "use a token or a client certificate")
        if user.get("token"):
            config.bearer_token = user["token"]
            config.bearer_token_file = user.get("tokenFile", "")
        elif user.get("tokenFile"):
            config.bearer_token_file = user["tokenFile"]
            try:
                config.bearer_token = Path(user["tokenFile"]).read_text().strip()
            except OSError as failure:
                raise MkctlError(f"open {user['tokenFile']}: {failure.strerror.lower()}"
                                 ) from None
        if user.get("client-certificate") or user.get("client-certificate-data"):
            config.cert_file = user.get("client-certificate", "")
            config.cert_data = user.get("client-certificate-data", b"")
            config.key_file = user.get("client-key", "")
            config.key_data = user.get("client-key-data", b"")
        if user.get("username") or user.get("password"):
            config.username = user.get("username", "")
            config.password = user.get("password", "")
        config.ca_file = cluster.get("certificate-authority", "")
        config.ca_data = cluster.get("certificate-authority-data", b"")
        config.insecure = bool(cluster.get("insecure-skip-tls-verify"))
        config.server_name = cluster.get("tls-server-name", "")
        return config

    def _is_default(self) -> bool:
        """Whether nothing but the defaults chose the server (then, in a pod, the
        in-cluster configuration is used, as DeferredLoadingClientConfig does)."""
        cluster, _ = self._cluster()
        user, _ = self._user()
        return cluster == {"server": default_server()} and not user


def default_server() -> str:
    return os.environ.get("KUBERNETES_MASTER") or DEFAULT_SERVER


def validate_user(name: str, user: Entry) -> list[Exception]:
    """validateAuthInfo: the checks of clientcmd/validation.go that apply to mkctl."""
    problems: list[Exception] = []
    methods = []
    if user.get("token"):
        methods.append("token")
    if user.get("username") or user.get("password"):
        methods.append("basicAuth")
    if user.get("client-certificate") or user.get("client-certificate-data"):
        if user.get("client-certificate") and user.get("client-certificate-data"):
            problems.append(MkctlError(f"client-cert-data and client-cert are both specified "
                                       f"for {name}. client-cert-data will override."))
        if user.get("client-key") and user.get("client-key-data"):
            problems.append(MkctlError(f"client-key-data and client-key are both specified "
                                       f"for {name}; client-key-data will override"))
        if not user.get("client-key") and not user.get("client-key-data"):
            problems.append(MkctlError(f"client-key-data or client-key must be specified for "
                                       f"{name} to use the clientCert authentication method."))
        for key, label in (("client-certificate", "client-cert"), ("client-key", "client-key")):
            if user.get(key):
                problem = _unreadable(user[key])
                if problem:
                    problems.append(MkctlError(f"unable to read {label} {user[key]} for "
                                               f"{name} due to {problem}"))
    if len(methods) > 1:
        problems.append(MkctlError(f"more than one authentication method found for {name}; "
                                   f"found [{' '.join(methods)}], only one is allowed"))
    if (user.get("as-uid") or user.get("as-groups") or user.get("as-user-extra")) and not (
            user.get("as")):
        problems.append(MkctlError(f"requesting uid, groups or user-extra for {name} without "
                                   "impersonating a user"))
    return problems


def validate_cluster(name: str, cluster: Entry) -> list[Exception]:
    """validateClusterInfo."""
    problems: list[Exception] = []
    if not cluster.get("server"):
        problems.append(MkctlError(f'no server found for cluster "{name}"' if name
                                   else "default cluster has no server defined"))
    if cluster.get("certificate-authority") and cluster.get("certificate-authority-data"):
        problems.append(MkctlError(f"certificate-authority-data and certificate-authority are "
                                   f"both specified for {name}. certificate-authority-data "
                                   "will override."))
    if cluster.get("certificate-authority"):
        problem = _unreadable(cluster["certificate-authority"])
        if problem:
            problems.append(MkctlError(f"unable to read certificate-authority "
                                       f"{cluster['certificate-authority']} for {name} due to "
                                       f"{problem}"))
    return problems


def _unreadable(path: str) -> str:
    """Go's os.Open error for a file that cannot be opened ("" when it can)."""
    try:
        with open(path, "rb"):
            return ""
    except OSError as error:
        return f"open {path}: {(error.strerror or 'error').lower()}"


# -- inside a pod ----------------------------------------------------------------------

def in_cluster_possible() -> bool:
    """inClusterClientConfig.Possible: the pod's environment and ServiceAccount token."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")
                and os.environ.get("KUBERNETES_SERVICE_PORT")
                and (SERVICE_ACCOUNT_DIR / "token").is_file())


def in_cluster_namespace() -> str:
    namespace = os.environ.get("POD_NAMESPACE", "")
    if not namespace:
        try:
            namespace = (SERVICE_ACCOUNT_DIR / "namespace").read_text().strip()
        except OSError:
            namespace = ""
    return namespace or "default"


def in_cluster_config(overrides: Overrides) -> RestConfig:
    """rest.InClusterConfig: the kubernetes Service, the pod's token and the cluster CA."""
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    if ":" in host:
        host = f"[{host}]"
    config = RestConfig(
        host=overrides.server or f"https://{host}:{os.environ['KUBERNETES_SERVICE_PORT']}",
        bearer_token=overrides.token or (SERVICE_ACCOUNT_DIR / "token").read_text().strip(),
        bearer_token_file="" if overrides.token else str(SERVICE_ACCOUNT_DIR / "token"),
        ca_file=overrides.certificate_authority or str(SERVICE_ACCOUNT_DIR / "ca.crt"))
    if overrides.timeout:
        config.timeout = parse_timeout(overrides.timeout)
    return config


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
    from minikube_py.mkctl.goyaml.emit import dump

    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, mode=0o755, exist_ok=True)
    text = dump(to_v1(config))
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
