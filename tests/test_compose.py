"""docker-compose.yml, checked without a Docker engine (none runs where the tests run):
Debian's `docker-compose config` accepts it, and every command in it, or in the node
script, names an entry point that exists and takes exactly those flags."""

from __future__ import annotations

import importlib
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
NODE_SCRIPT = ROOT / "compose" / "node.sh"


def services() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def parse_flags(module: str, flags: list[str]) -> None:
    """The component's own argument parser takes these flags (argparse exits otherwise)."""
    main = importlib.import_module(f"{module}.__main__")
    if hasattr(main, "parse_args"):
        main.parse_args(flags)
    else:
        main.build_parser().parse_args(flags)


def test_docker_compose_accepts_the_file() -> None:
    assert shutil.which("docker-compose"), "docker-compose is missing: `make apt` installs it"
    checked = subprocess.run(["docker-compose", "-f", str(COMPOSE), "config", "--quiet"],
                             capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize("name", [n for n, s in services().items()
                                  if "minikube_py" in " ".join(s["command"])])
def test_each_python_service_runs_a_component_with_flags_it_takes(name: str) -> None:
    command = services()[name]["command"]
    assert command[:2] == [".venv/bin/python", "-m"], command
    module, flags = command[2], command[3:]
    if module == "minikube_py.cluster":  # the launcher's image command
        from minikube_py.cluster.cli import main
        with pytest.raises(SystemExit) as shown:
            main([*flags, "--help"])
        assert shown.value.code == 0
        return
    parse_flags(module, flags)


def test_the_other_services_run_programs_the_image_installs() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    for name, service in services().items():
        program = service["command"][0]
        if program.startswith((".venv/", "compose/")):
            assert (ROOT / program).exists() or program.startswith(".venv/"), program
            continue
        package = {"etcd": "etcd-server", "docker-registry": "docker-registry"}[program]
        assert package in dockerfile, (name, package)
    registry = services()["registry"]["command"][-1]
    assert (ROOT / registry).is_file()


def test_the_node_script_starts_components_with_flags_they_take() -> None:
    assert os.access(NODE_SCRIPT, os.X_OK)
    assert subprocess.run(["sh", "-n", str(NODE_SCRIPT)]).returncode == 0
    text = NODE_SCRIPT.read_text().replace("\\\n", " ")
    values = {"NODE_NAME": "node-1", "BASE": "/var/lib/minikube-py/node-1",
              "KUBECONFIG": "/src/compose/kubeconfig", "POD_CIDR": "10.244.1.0/24",
              "NODE_IP": "172.28.0.11", "PY": "/src/.venv/bin/python"}
    started = []
    for line in text.splitlines():
        if " -m minikube_py." not in line:
            continue
        expanded = re.sub(r"\$\{?(\w+)\}?", lambda m: values[m.group(1)], line)
        words = shlex.split(expanded.removeprefix("exec ").rstrip("& "))
        module = words[words.index("-m") + 1]
        parse_flags(module, words[words.index("-m") + 2:])
        started.append(module)
    assert started == ["minikube_py.proxy", "minikube_py.kubelet"]
    for node in ("node-1", "node-2"):
        assert services()[node]["command"] == ["compose/node.sh"]
        assert services()[node]["privileged"] is True


def test_the_image_installs_what_make_apt_installs() -> None:
    makefile = (ROOT / "Makefile").read_text()
    wanted = set(re.findall(r'missing="\$\$missing ([\w-]+)"', makefile))
    wanted.discard("docker-compose")  # the test's tool, not the cluster's
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert {p for p in wanted if p not in dockerfile} == set()
