"""mkctl's kubeconfig resolution, case by case against client-go's clientcmd rules:
which file wins, what the flags override, and the checks' messages."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from minikube_py.mkctl.errors import (
    Aggregate,
    ConfigurationInvalid,
    ContextNotFound,
    MkctlError,
    report,
)
from minikube_py.mkctl.kubeconfig import (
    ClientConfig,
    KubeconfigError,
    LoadingRules,
    Overrides,
    load_file,
    to_v1,
)


def write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(document))
    return path


def kubeconfig(*, clusters: dict[str, dict] | None = None, users: dict[str, dict] | None = None,
               contexts: dict[str, dict] | None = None, current: str | None = None
               ) -> dict[str, Any]:
    document: dict[str, Any] = {"apiVersion": "v1", "kind": "Config"}
    for section, key, entries in (("clusters", "cluster", clusters), ("users", "user", users),
                                  ("contexts", "context", contexts)):
        if entries is not None:
            document[section] = [{"name": name, key: entry} for name, entry in entries.items()]
    if current is not None:
        document["current-context"] = current
    return document


def client(rules: LoadingRules, **overrides: Any) -> ClientConfig:
    return ClientConfig(rules.load(), Overrides(**overrides))


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[Path, Path]:
    first = write(tmp_path / "first", kubeconfig(
        clusters={"shared": {"server": "https://first:6443"}},
        users={"me": {"token": "first-token"}},
        contexts={"dev": {"cluster": "shared", "user": "me", "namespace": "first-ns"}},
        current="dev"))
    second = write(tmp_path / "second", kubeconfig(
        clusters={"shared": {"server": "https://second:6443", "insecure-skip-tls-verify": True},
                  "only-second": {"server": "https://only:6443"}},
        users={"me": {"token": "second-token", "as": "ignored"}},
        contexts={"dev": {"cluster": "only-second", "user": "me"},
                  "prod": {"cluster": "only-second", "user": "me"}},
        current="prod"))
    return first, second


def test_kubeconfig_lists_files_merged_the_first_to_set_a_name_wins_whole(
        two_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = two_files
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    config = LoadingRules.default().load()
    assert config.current_context == "dev"
    assert config.clusters["shared"] == {"server": "https://first:6443"}  # not merged field-wise
    assert config.users["me"] == {"token": "first-token"}
    assert set(config.contexts) == {"dev", "prod"}
    assert config.clusters["only-second"] == {"server": "https://only:6443"}


def test_missing_files_in_kubeconfig_are_skipped_and_duplicates_read_once(
        two_files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = two_files
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{second}:{first}:{second}")
    rules = LoadingRules.default()
    assert rules.files() == [str(tmp_path / "missing"), str(second), str(first)]
    assert rules.load().current_context == "prod"
    assert rules.default_filename() == str(second)


def test_without_kubeconfig_the_home_config_is_read(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".kube").mkdir()
    write(tmp_path / ".kube" / "config", kubeconfig(
        clusters={"c": {"server": "https://home:6443"}}, users={"u": {}},
        contexts={"c": {"cluster": "c", "user": "u"}}, current="c"))
    assert client(LoadingRules.default()).rest_config().host == "https://home:6443"


def test_an_explicit_kubeconfig_must_exist_and_replaces_the_env(
        two_files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = two_files
    monkeypatch.setenv("KUBECONFIG", str(first))
    assert LoadingRules.default(str(second)).load().current_context == "prod"
    with pytest.raises(KubeconfigError) as failure:
        LoadingRules.default(str(tmp_path / "nope")).load()
    assert str(failure.value) == f"stat {tmp_path / 'nope'}: no such file or directory"


def test_no_files_at_all_means_localhost_8080(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    config = client(LoadingRules.default())
    assert config.namespace() == ("default", False)
    assert config.rest_config().host == "http://localhost:8080"


def test_paths_in_a_file_are_relative_to_it_except_for_config_commands(tmp_path: Path) -> None:
    directory = tmp_path / "dir"
    directory.mkdir()
    path = write(directory / "config", kubeconfig(
        clusters={"c": {"server": "https://h:1", "certificate-authority": "pki/ca.crt"}},
        users={"u": {"client-certificate": "../u.crt", "client-key": "/abs/u.key",
                     "tokenFile": "token"}},
        contexts={"c": {"cluster": "c", "user": "u"}}, current="c"))
    resolved = LoadingRules(str(path)).load()
    assert resolved.clusters["c"]["certificate-authority"] == str(directory / "pki" / "ca.crt")
    assert resolved.users["u"]["client-certificate"] == str(tmp_path / "u.crt")
    assert resolved.users["u"]["client-key"] == "/abs/u.key"
    assert resolved.users["u"]["tokenFile"] == str(directory / "token")
    as_written = LoadingRules(str(path), resolve_paths=False).load()
    assert as_written.clusters["c"]["certificate-authority"] == "pki/ca.crt"


def test_flags_override_the_context_its_parts_and_the_cluster_and_user_fields(
        two_files: tuple[Path, Path]) -> None:
    first, second = two_files
    rules = LoadingRules(str(second))
    assert client(rules).namespace() == ("default", False)
    assert client(rules, namespace="web").namespace() == ("web", True)
    overridden = client(rules, context="dev", server="https://flag:1", token="flag-token"
                        ).rest_config()
    assert (overridden.host, overridden.bearer_token) == ("https://flag:1", "flag-token")
    other_user = client(LoadingRules(str(first)), user="me", cluster="shared").rest_config()
    assert other_user.bearer_token == "first-token"


def test_a_ca_or_insecure_flag_replaces_all_of_the_files_trust(tmp_path: Path) -> None:
    path = write(tmp_path / "config", kubeconfig(
        clusters={"c": {"server": "https://h:1", "certificate-authority-data":
                        base64.b64encode(b"pem").decode(), "insecure-skip-tls-verify": False}},
        users={"u": {}}, contexts={"c": {"cluster": "c", "user": "u"}}, current="c"))
    insecure = client(LoadingRules(str(path)), insecure_skip_tls_verify=True).rest_config()
    assert (insecure.insecure, insecure.ca_data, insecure.ca_file) == (True, b"", "")
    from_file = client(LoadingRules(str(path)), certificate_authority=str(path)).rest_config()
    assert (from_file.ca_file, from_file.ca_data) == (str(path), b"")
    as_file_says = client(LoadingRules(str(path))).rest_config()
    assert as_file_says.ca_data == b"pem"


def test_credentials_are_sent_over_tls_only(tmp_path: Path) -> None:
    path = write(tmp_path / "config", kubeconfig(
        clusters={"c": {"server": "http://h:1"}}, users={"u": {"token": "secret"}},
        contexts={"c": {"cluster": "c", "user": "u"}}, current="c"))
    assert client(LoadingRules(str(path))).rest_config().bearer_token == ""
    tls = client(LoadingRules(str(path)), server="https://h:1").rest_config()
    assert tls.bearer_token == "secret"


def test_a_token_file_is_read_and_trimmed(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("abc\n")
    path = write(tmp_path / "config", kubeconfig(
        clusters={"c": {"server": "https://h:1"}}, users={"u": {"tokenFile": "token"}},
        contexts={"c": {"cluster": "c", "user": "u"}}, current="c"))
    assert client(LoadingRules(str(path))).rest_config().bearer_token == "abc"


def test_embedded_certificate_data_is_decoded(tmp_path: Path) -> None:
    path = write(tmp_path / "config", kubeconfig(
        clusters={"c": {"server": "https://h:1"}},
        users={"u": {"client-certificate-data": base64.b64encode(b"CERT").decode(),
                     "client-key-data": base64.b64encode(b"KEY").decode()}},
        contexts={"c": {"cluster": "c", "user": "u"}}, current="c"))
    rest = client(LoadingRules(str(path))).rest_config()
    assert (rest.cert_data, rest.key_data) == (b"CERT", b"KEY")


@pytest.mark.parametrize(("overrides", "message"), [
    ({"context": "nope"}, "Error in configuration: context was not found for specified "
                          "context: nope"),
    ({"cluster": "nope"}, 'error: no server found for cluster "nope"'),
])
def test_the_chosen_context_is_checked_with_clientcmds_words(
        two_files: tuple[Path, Path], overrides: dict[str, str], message: str) -> None:
    with pytest.raises(MkctlError) as failure:
        client(LoadingRules(str(two_files[0])), **overrides).namespace()
    assert report(failure.value) == (message, 1)


def test_a_missing_user_named_by_flag_fails_when_connecting(two_files: tuple[Path, Path]
                                                          ) -> None:
    config = client(LoadingRules(str(two_files[0])), user="nope")
    assert config.namespace() == ("first-ns", False)
    with pytest.raises(MkctlError, match='auth info "nope" does not exist'):
        config.rest_config()


def test_several_problems_are_listed_under_error_in_configuration(tmp_path: Path) -> None:
    path = write(tmp_path / "config", kubeconfig(
        clusters={"c": {"server": "https://h:1", "certificate-authority": str(tmp_path / "x")}},
        users={"u": {"token": "t", "username": "bob"}},
        contexts={"c": {"cluster": "c", "user": "u"}}, current="missing"))
    with pytest.raises(ConfigurationInvalid) as failure:
        client(LoadingRules(str(path)), context="c").namespace()
    message, code = report(failure.value)
    assert code == 1
    assert message.splitlines() == [
        "Error in configuration: ",
        "* more than one authentication method found for u; found [token basicAuth], only one "
        "is allowed",
        f"* unable to read certificate-authority {tmp_path / 'x'} for c due to open "
        f"{tmp_path / 'x'}: no such file or directory"]
    assert isinstance(ContextNotFound("x"), MkctlError)


@pytest.mark.parametrize(("text", "message"), [
    ("clusters: [\n", "yaml: line 1: did not find expected node content"),
    ("- a\n- b\n", "couldn't get version/kind; json parse error: json: cannot unmarshal array "
                   "into Go value of type struct"),
    ("clusters:\n- name: c\n  cluster:\n    server: [1]\n",
     "json: cannot unmarshal array into Go struct field Cluster.clusters.cluster.server of "
     "type string"),
    ("clusters:\n- name: c\n  cluster:\n    insecure-skip-tls-verify: 'true'\n",
     "json: cannot unmarshal string into Go struct field Cluster.clusters.cluster."
     "insecure-skip-tls-verify of type bool"),
])
def test_broken_files_are_reported_per_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    with pytest.raises(Aggregate) as failure:
        LoadingRules(str(path)).load()
    assert str(failure.value).startswith(f'error loading config file "{path}": {message}')


def test_yaml_scalars_bound_for_strings_become_strings(tmp_path: Path) -> None:
    path = write(tmp_path / "config", kubeconfig(
        clusters={"c": {"server": "https://h:1"}}, users={"u": {"token": 12345}},
        contexts={"c": {"cluster": "c", "user": "u", "namespace": True}}, current="c"))
    config = load_file(str(path))
    assert config.users["u"]["token"] == "12345"
    assert config.contexts["c"]["namespace"] == "true"


def test_the_v1_form_lists_entries_by_name_in_go_struct_order(two_files: tuple[Path, Path]
                                                              ) -> None:
    document = to_v1(LoadingRules(str(two_files[1])).load())
    assert list(document) == ["kind", "apiVersion", "clusters", "users", "contexts",
                              "current-context"]
    assert [entry["name"] for entry in document["clusters"]] == ["only-second", "shared"]
    assert document["clusters"][1]["cluster"] == {"server": "https://second:6443",
                                                  "insecure-skip-tls-verify": True}
    assert document["contexts"][0]["context"] == {"cluster": "only-second", "user": "me"}


def test_inside_a_pod_with_nothing_configured_the_service_account_is_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from minikube_py.mkctl.kubeconfig import client as module

    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("pod-token\n")
    (account / "namespace").write_text("team")
    monkeypatch.setattr(module, "SERVICE_ACCOUNT_DIR", account)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    config = client(LoadingRules.default())
    assert config.namespace() == ("team", False)
    rest = config.rest_config()
    assert (rest.host, rest.bearer_token, rest.ca_file) == (
        "https://10.96.0.1:443", "pod-token", str(account / "ca.crt"))
