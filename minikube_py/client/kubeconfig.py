"""Read kubeconfig files the way kubectl does: $KUBECONFIG, ~/.kube/config, contexts.

The result is a `ClientConfig`: the server URL, the namespace of the current context,
and the credentials (token, client certificate, CA) to reach it. Several files in
$KUBECONFIG are merged as kubectl merges them: for every map entry (cluster, user,
context) and for `current-context`, the first file that sets it wins.
"""

from __future__ import annotations

import base64
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class KubeconfigError(Exception):
    """The kubeconfig is missing, unreadable, or names something it does not define."""


@dataclass(frozen=True)
class ClientConfig:
    """Where the API server is and how to authenticate to it (client-go's rest.Config)."""

    server: str
    namespace: str = "default"
    token: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure_skip_tls_verify: bool = False

    def ssl_context(self) -> ssl.SSLContext | bool | None:
        """The TLS settings for aiohttp: None for plain HTTP, False to skip verification."""
        if not self.server.startswith("https://"):
            return None
        if self.insecure_skip_tls_verify:
            return False
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.cert_file and self.key_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def tls_context(self) -> ssl.SSLContext | None:
        """The TLS settings as one SSLContext (None for plain HTTP): the CA to trust, or
        no verification at all, and the client certificate if there is one."""
        if not self.server.startswith("https://"):
            return None
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.insecure_skip_tls_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert_file and self.key_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        return context


def default_kubeconfig_paths() -> list[Path]:
    """$KUBECONFIG (a `:`-separated list) if set, else ~/.kube/config, as kubectl."""
    env = os.environ.get("KUBECONFIG", "")
    if env:
        return [Path(part).expanduser() for part in env.split(os.pathsep) if part]
    return [Path.home() / ".kube" / "config"]


def _named(entries: Any, what: str, source: Path) -> dict[str, dict[str, Any]]:
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise KubeconfigError(f"{source}: {what} must be a list")
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise KubeconfigError(f"{source}: every entry of {what} needs a name")
        found[entry["name"]] = entry.get(what.rstrip("s")) or {}
    return found


def _merge(paths: list[Path]) -> dict[str, Any]:
    """Merge kubeconfig files: the first file to define a name or current-context wins."""
    merged: dict[str, Any] = {"clusters": {}, "users": {}, "contexts": {}, "current-context": ""}
    read_any = False
    for path in paths:
        if not path.exists():
            continue
        try:
            document = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as error:
            raise KubeconfigError(f"cannot read kubeconfig {path}: {error}") from error
        if not isinstance(document, dict):
            raise KubeconfigError(f"{path}: a kubeconfig must be a YAML mapping")
        read_any = True
        for section in ("clusters", "users", "contexts"):
            for name, value in _named(document.get(section), section, path).items():
                merged[section].setdefault(name, {**value, "_source": path})
        if not merged["current-context"] and document.get("current-context"):
            merged["current-context"] = document["current-context"]
    if not read_any:
        shown = ", ".join(str(p) for p in paths)
        raise KubeconfigError(f"no kubeconfig found at {shown}; run `minikube-py up` first")
    return merged


# Certificates given inline (`...-data`) go into memory files, which TLS reads by path
# (/proc/self/fd/N): they last as long as the process and go with it however it ends,
# where a temporary file outlives a process that is killed. One file per distinct PEM.
_INLINE_FILES: dict[str, str] = {}


def _file_or_data(entry: dict[str, Any], key: str) -> str | None:
    """`certificate-authority` (a path, relative to the kubeconfig) or `...-data` (base64)."""
    data = entry.get(f"{key}-data")
    if data:
        if data not in _INLINE_FILES:
            descriptor = os.memfd_create(f"minikube-py-{key}")
            with open(descriptor, "wb", closefd=False) as memory:
                memory.write(base64.b64decode(data))
            _INLINE_FILES[data] = f"/proc/self/fd/{descriptor}"
        return _INLINE_FILES[data]
    path = entry.get(key)
    if not path:
        return None
    resolved = Path(path).expanduser()
    if not resolved.is_absolute():
        resolved = Path(entry["_source"]).parent / resolved
    return str(resolved)


def load_kubeconfig(path: str | Path | None = None, *, context: str | None = None
                    ) -> ClientConfig:
    """Build a ClientConfig from a kubeconfig file (or the default search path)."""
    paths = [Path(path).expanduser()] if path else default_kubeconfig_paths()
    merged = _merge(paths)
    context_name = context or merged["current-context"]
    if not context_name:
        raise KubeconfigError("the kubeconfig has no current-context; pass a context")
    if context_name not in merged["contexts"]:
        raise KubeconfigError(f'context "{context_name}" does not exist')
    ctx = merged["contexts"][context_name]
    cluster = merged["clusters"].get(ctx.get("cluster", ""))
    if cluster is None or not cluster.get("server"):
        raise KubeconfigError(
            f'context "{context_name}" names cluster "{ctx.get("cluster", "")}", '
            "which has no server")
    user = merged["users"].get(ctx.get("user", ""), {"_source": cluster["_source"]})
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = Path(user["tokenFile"]).read_text().strip()
    return ClientConfig(
        server=cluster["server"].rstrip("/"),
        namespace=ctx.get("namespace") or "default",
        token=token,
        ca_file=_file_or_data(cluster, "certificate-authority"),
        cert_file=_file_or_data(user, "client-certificate"),
        key_file=_file_or_data(user, "client-key"),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify")),
    )
