"""The chosen context, the command line's overrides, and the result: where requests go and
with which credentials (client-go's clientcmd client_config.go and validation.go).

    client_config = ClientConfig(LoadingRules.default(flags["kubeconfig"]).load(), overrides)
    namespace, explicit = client_config.namespace()
    rest_config = client_config.rest_config()

1. `--context` picks the context; `--cluster`, `--user` and `-n` replace its parts;
   `--server`, `--token`, `--certificate-authority`, ... replace fields of the chosen
   cluster and user (a CA or --insecure-skip-tls-verify given on the command line
   replaces all of the file's TLS trust settings).
2. The checks (`ConfirmUsable`), in kubectl's words: "context was not found for specified
   context: x", "no server found for cluster "y"", ...
3. Credentials only travel over https.
4. With nothing configured at all, the server is http://localhost:8080, or, inside a pod,
   the in-cluster ServiceAccount configuration.
"""

from __future__ import annotations

import os
from pathlib import Path

from minikube_py.mkctl.errors import ConfigurationInvalid, ContextNotFound, MkctlError
from minikube_py.mkctl.kubeconfig.files import Config, Entry
from minikube_py.mkctl.record import Record

DEFAULT_SERVER = "http://localhost:8080"
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


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
    from minikube_py.api.duration import parse_duration

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
