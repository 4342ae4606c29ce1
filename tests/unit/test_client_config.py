"""kubeconfig loading as kubectl does it, and the informer store's indexes."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from minikube_py.client.errors import AlreadyExists, Conflict, Gone, NotFound, status_error
from minikube_py.client.kubeconfig import KubeconfigError, load_kubeconfig
from minikube_py.client.store import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    OWNER_UID_INDEX,
    Indexer,
    object_key,
    split_key,
)


def write(path: Path, document: dict) -> Path:
    path.write_text(yaml.safe_dump(document))
    return path


def config(server: str, *, context: str = "ctx", namespace: str | None = None,
           user: dict | None = None, current: str | None = "ctx") -> dict:
    ctx = {"cluster": "c-" + context, "user": "u-" + context}
    if namespace:
        ctx["namespace"] = namespace
    document = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c-" + context, "cluster": {"server": server}}],
        "users": [{"name": "u-" + context, "user": user or {}}],
        "contexts": [{"name": context, "context": ctx}],
    }
    if current:
        document["current-context"] = current
    return document


def test_reads_server_and_namespace_of_the_current_context(tmp_path: Path) -> None:
    path = write(tmp_path / "k", config("http://127.0.0.1:6443/", namespace="labs"))
    loaded = load_kubeconfig(path)
    assert loaded.server == "http://127.0.0.1:6443"
    assert loaded.namespace == "labs"
    assert loaded.ssl_context() is None


def test_namespace_defaults_to_default(tmp_path: Path) -> None:
    assert load_kubeconfig(write(tmp_path / "k", config("http://h:1"))).namespace == "default"


def test_kubeconfig_env_merges_files_first_one_wins(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    first = write(tmp_path / "a", config("http://first:1", context="one", current="two"))
    second = write(tmp_path / "b", config("http://second:2", context="two", current="one"))
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    loaded = load_kubeconfig()
    assert loaded.server == "http://second:2", "current-context from the first file that sets it"
    assert load_kubeconfig(context="one").server == "http://first:1"


def test_home_kube_config_is_the_fallback(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".kube").mkdir()
    write(tmp_path / ".kube" / "config", config("http://home:3"))
    assert load_kubeconfig().server == "http://home:3"


def test_token_and_inline_certificates(tmp_path: Path) -> None:
    document = config("https://h:6443", user={
        "token": "abc", "client-certificate-data": base64.b64encode(b"CERT").decode()})
    document["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    loaded = load_kubeconfig(write(tmp_path / "k", document))
    assert loaded.token == "abc"
    assert loaded.cert_file is not None and Path(loaded.cert_file).read_bytes() == b"CERT"
    assert loaded.ssl_context() is False


def test_inline_certificates_leave_no_file_behind(tmp_path: Path) -> None:
    """They are memory files of this process (a file in /tmp outlived a killed process);
    loading the kubeconfig again reads the same one."""
    document = config("https://h:6443", user={
        "client-certificate-data": base64.b64encode(b"CERT").decode(),
        "client-key-data": base64.b64encode(b"KEY").decode()})
    first = load_kubeconfig(write(tmp_path / "k", document))
    again = load_kubeconfig(tmp_path / "k")
    assert first.cert_file is not None and first.key_file is not None
    assert (again.cert_file, again.key_file) == (first.cert_file, first.key_file)
    for path, content in ((first.cert_file, b"CERT"), (first.key_file, b"KEY")):
        assert Path(path).read_bytes() == content
        assert Path(path).resolve().name.startswith("memfd:"), Path(path).resolve()


def test_relative_certificate_paths_are_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    document = config("https://h:6443")
    document["clusters"][0]["cluster"]["certificate-authority"] = "ca.crt"
    loaded = load_kubeconfig(write(tmp_path / "k", document))
    assert loaded.ca_file == str(tmp_path / "ca.crt")


@pytest.mark.parametrize("document, message", [
    (config("http://h:1", current=None), "no current-context"),
    (config("http://h:1", current="missing"), 'context "missing" does not exist'),
    ({**config("http://h:1"), "clusters": []}, "which has no server"),
])
def test_bad_kubeconfigs_say_what_is_wrong(tmp_path: Path, document: dict,
                                          message: str) -> None:
    with pytest.raises(KubeconfigError, match=message):
        load_kubeconfig(write(tmp_path / "k", document))


def test_a_missing_kubeconfig_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="minikube-py up"):
        load_kubeconfig(tmp_path / "nothing-here")


@pytest.mark.parametrize("reason, code, cls", [
    ("NotFound", 404, NotFound), ("AlreadyExists", 409, AlreadyExists),
    ("Conflict", 409, Conflict), ("Expired", 410, Gone), ("", 404, NotFound),
])
def test_status_errors_map_to_typed_exceptions(reason: str, code: int, cls: type) -> None:
    error = status_error({"kind": "Status", "reason": reason, "message": "m"}, code)
    assert type(error) is cls
    assert error.code == code and str(error) == "m"


def pod(name: str, namespace: str = "ns", node: str = "", owners: tuple[str, ...] = ()) -> dict:
    return {"metadata": {"name": name, "namespace": namespace,
                         "ownerReferences": [{"uid": uid} for uid in owners]},
            "spec": {"nodeName": node} if node else {}}


def test_keys_are_namespace_slash_name() -> None:
    assert object_key(pod("a")) == "ns/a"
    assert object_key({"metadata": {"name": "node-1"}}) == "node-1"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("node-1") == ("", "node-1")


def test_indexes_follow_updates_and_deletes() -> None:
    store = Indexer()
    store.put(pod("a", node="n1", owners=("rs-1",)))
    store.put(pod("b", node="n1"))
    store.put(pod("c", namespace="other", node="n2", owners=("rs-1",)))
    assert {p["metadata"]["name"] for p in store.by_index(NODE_NAME_INDEX, "n1")} == {"a", "b"}
    assert {p["metadata"]["name"] for p in store.by_index(OWNER_UID_INDEX, "rs-1")} == {"a", "c"}
    assert [p["metadata"]["name"] for p in store.list("other")] == ["c"]
    store.put(pod("a", node="n2"))
    assert {p["metadata"]["name"] for p in store.by_index(NODE_NAME_INDEX, "n1")} == {"b"}
    assert {p["metadata"]["name"] for p in store.by_index(OWNER_UID_INDEX, "rs-1")} == {"c"}
    store.remove("other/c")
    assert store.by_index(OWNER_UID_INDEX, "rs-1") == []
    assert store.by_index(NAMESPACE_INDEX, "other") == []
    assert len(store) == 2


def test_custom_indexers_cover_objects_already_stored() -> None:
    store = Indexer()
    store.put(pod("a"))
    store.add_indexers({"name-length": lambda obj: [str(len(obj["metadata"]["name"]))]})
    assert [p["metadata"]["name"] for p in store.by_index("name-length", "1")] == ["a"]
    store.replace([pod("bb")])
    assert store.by_index("name-length", "1") == []
    assert [p["metadata"]["name"] for p in store.by_index("name-length", "2")] == ["bb"]
