"""Secrets encrypted at rest: etcd (read with etcdctl) holds ciphertext, the API returns
plaintext, keys rotate as upstream documents it, and a bad configuration stops the API
server with one line."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minikube_py.apiserver.storage.encryption import (
    TransformError,
    ValueTransformer,
    load_encryption_config,
)
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
KEY1, KEY2 = os.urandom(32), os.urandom(32)


def config(path: Path, *providers: str) -> Path:
    """An EncryptionConfiguration for secrets with these provider entries (YAML)."""
    body = "\n".join(f"      - {p}" for p in providers)
    path.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"
                    f"resources:\n  - resources: [secrets]\n    providers:\n{body}\n")
    return path


def aes(kind: str, *keys: tuple[str, bytes]) -> str:
    listed = ", ".join(f"{{name: {name}, secret: {base64.b64encode(secret).decode()}}}"
                       for name, secret in keys)
    return f"{kind}: {{keys: [{listed}]}}"


@pytest.fixture
async def encryption_etcd(fast_tmp: Path) -> AsyncIterator[EtcdProcess]:
    """An etcd per test: a value no key of a later test can read would keep that test's
    API server from ever having its Secrets cached."""
    async with EtcdProcess(fast_tmp / f"etcd-encryption-{uuid.uuid4().hex[:8]}") as process:
        yield process


def etcdctl_get(etcd: EtcdProcess, key: str) -> bytes:
    return subprocess.run(["etcdctl", f"--endpoints={etcd.client_url}", "get", key,
                           "--print-value-only"], capture_output=True, check=True,
                          env={**os.environ, "ETCDCTL_API": "3"}).stdout.rstrip(b"\n")


def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, f"--kubeconfig={kubeconfig}", *args], capture_output=True,
                          text=True, timeout=30)


async def test_secrets_are_ciphertext_in_etcd_and_plaintext_through_the_api(
        encryption_etcd: EtcdProcess, tmp_path: Path) -> None:
    settings = config(tmp_path / "enc.yaml", aes("aesgcm", ("key1", KEY1)), "identity: {}")
    async with APIServerProcess([encryption_etcd.client_url], tmp_path / "api.log",
                                extra_args=(f"--encryption-provider-config={settings}",)
                                ) as api:
        kube = write_kubeconfig(tmp_path / "kubeconfig", api.url)
        assert kubectl(kube, "create", "secret", "generic", "db", "--from-literal",
                       "password=hunter2-plain").returncode == 0
        kubectl(kube, "create", "configmap", "open", "--from-literal", "note=not-secret")
        stored = etcdctl_get(encryption_etcd, "/registry/secrets/default/db")
        assert stored.startswith(b"k8s:enc:aesgcm:v1:key1:")
        assert b"hunter2" not in stored and b"aHVudGVyMi1wbGFpbg" not in stored
        assert b"not-secret" in etcdctl_get(encryption_etcd, "/registry/configmaps/default/open")
        read = kubectl(kube, "get", "secret", "db", "-o", "jsonpath={.data.password}").stdout
        assert base64.b64decode(read) == b"hunter2-plain"


async def test_keys_rotate_new_first_then_every_secret_rewritten(
        encryption_etcd: EtcdProcess, tmp_path: Path) -> None:
    first = config(tmp_path / "first.yaml", aes("aescbc", ("key1", KEY1)))
    async with APIServerProcess([encryption_etcd.client_url], tmp_path / "api1.log",
                                extra_args=(f"--encryption-provider-config={first}",)) as api:
        kube = write_kubeconfig(tmp_path / "kubeconfig1", api.url)
        kubectl(kube, "create", "secret", "generic", "rotated", "--from-literal", "k=v1")
    assert etcdctl_get(encryption_etcd, "/registry/secrets/default/rotated").startswith(
        b"k8s:enc:aescbc:v1:key1:")
    # the new key first: it writes; the old one still reads
    both = config(tmp_path / "both.yaml", aes("aescbc", ("key2", KEY2), ("key1", KEY1)))
    async with APIServerProcess([encryption_etcd.client_url], tmp_path / "api2.log",
                                extra_args=(f"--encryption-provider-config={both}",)) as api:
        kube = write_kubeconfig(tmp_path / "kubeconfig2", api.url)
        listed = kubectl(kube, "get", "secrets", "-A", "-o", "json")
        replaced = subprocess.run([KUBECTL, f"--kubeconfig={kube}", "replace", "-f", "-"],
                                  input=listed.stdout, capture_output=True, text=True)
        assert replaced.returncode == 0, replaced.stderr
    assert etcdctl_get(encryption_etcd, "/registry/secrets/default/rotated").startswith(
        b"k8s:enc:aescbc:v1:key2:")
    # now the old key can go
    second = config(tmp_path / "second.yaml", aes("aescbc", ("key2", KEY2)))
    async with APIServerProcess([encryption_etcd.client_url], tmp_path / "api3.log",
                                extra_args=(f"--encryption-provider-config={second}",)) as api:
        kube = write_kubeconfig(tmp_path / "kubeconfig3", api.url)
        value = kubectl(kube, "get", "secret", "rotated", "-o", "jsonpath={.data.k}").stdout
        assert base64.b64decode(value) == b"v1"


def test_a_ciphertext_moved_to_another_key_does_not_decrypt(tmp_path: Path) -> None:
    transformer = load_encryption_config(
        config(tmp_path / "enc.yaml", aes("aesgcm", ("key1", KEY1))))
    stored = transformer.to_storage(b"/registry/secrets/a/one", b'{"data":"x"}')
    assert transformer.from_storage(b"/registry/secrets/a/one", stored) == b'{"data":"x"}'
    with pytest.raises(TransformError, match="cannot decrypt"):
        transformer.from_storage(b"/registry/secrets/a/other", stored)
    # and a key it was not told about is no provider's
    with pytest.raises(TransformError, match="no provider"):
        ValueTransformer(transformer.providers).from_storage(
            b"/registry/secrets/a/one", stored.replace(b"key1", b"key9", 1))


@pytest.mark.parametrize(("providers", "message"), [
    ((aes("aesgcm", ("short", b"0123456789")),), "must be 16, 24 or 32 bytes, not 10"),
    (("secretbox: {keys: [{name: k, secret: AAAA}]}",), "provider 'secretbox' is not "
                                                        "supported"),
    (("aesgcm: {keys: []}",), "aesgcm needs at least one key"),
])
def test_a_bad_configuration_stops_the_api_server_with_one_line(
        tmp_path: Path, providers: tuple[str, ...], message: str) -> None:
    settings = config(tmp_path / "bad.yaml", *providers)
    done = subprocess.run([sys.executable, "-m", "minikube_py.apiserver",
                           "--etcd-servers=http://127.0.0.1:1",
                           f"--encryption-provider-config={settings}"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert message in done.stderr.splitlines()[-1], done.stderr
