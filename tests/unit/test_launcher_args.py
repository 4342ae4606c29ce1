"""`minikube-py up` refuses bad flags with one line, before it changes anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikube_py.cluster.cli import main, parse_extra_config


@pytest.mark.parametrize(("argv", "message"), [
    (["up", "--nodes", "0"], "--nodes must be between 1 and 50, not 0"),
    (["up", "--simulated-nodes", "-2"], "--simulated-nodes must be 0 or more, not -2"),
    (["up", "--extra-config", "node-monitor-grace-period=10s"],
     "--extra-config wants COMPONENT.FLAG=VALUE"),
    (["up", "--extra-config", "controller-manager.node-monitor-grace-period"],
     "--extra-config wants COMPONENT.FLAG=VALUE"),
    (["up", "--extra-config", "etcd.quota-backend-bytes=1"],
     "--extra-config: no component 'etcd'; one of: apiserver, controller-manager"),
])
def test_a_bad_flag_is_one_line_and_nothing_is_written(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("MINIKUBE_PY_HOME", str(home))
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: {message}") and error.count("\n") == 1, error
    assert not home.exists()


def test_extra_config_groups_flags_by_component_and_a_later_one_wins() -> None:
    assert parse_extra_config([
        "controller-manager.node-monitor-grace-period=10s", "kubelet.max-pods=20",
        "controller-manager.node-monitor-grace-period=8s", "apiserver.v=3",
    ]) == {"controller-manager": {"node-monitor-grace-period": "8s"},
           "kubelet": {"max-pods": "20"}, "apiserver": {"v": "3"}}
