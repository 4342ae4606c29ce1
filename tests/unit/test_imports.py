"""Imports run one way: components talk to each other only through the API server.

The packages of minikube_py are of three sorts:
- shared libraries anyone may import: `api` (API types and rules, and how Go writes YAML
  and numbers: `api/goyaml`, `api/gofmt`), `client` (the
  client-go equivalent), `gen` (generated protobuf code), the `lifecycle` module (how a
  component runs: run, start, stop), the `process` module (how a component runs as a
  child process), `streaming` (the wire protocols of exec, attach and port-forward,
  which the API server and the kubelet both speak), `security` (certificates, which
  the launcher makes and every component reads), `tracing` (spans, and the trace
  context every component passes on), the `cri` module (the CRI v1 client, which
  the kubelet and the launcher drive containerd with, as upstream's cri-client) and
  the `cri_logs` module (reading the CRI log files containerd writes, cri-client's logs);
- components: `apiserver`, `controllers`, `scheduler`, `kubelet`, `proxy`, `dns`, `images`,
  `mkctl`, `metrics`, `tracestore` (the trace receiver), `provisioner` (local-path),
  `gateway` (Ingress and Gateway API), `dashboard` (the web dashboard). A
  component imports shared libraries and itself, never another component: each runs as
  its own process and reaches the others only through the API server (images are built
  and pushed without a node);
- the launcher, `cluster`: it starts each component as a process (`python -m
  minikube_py.<component>`), so it needs none of their code, except the etcd client it
  probes the etcd it started with (`apiserver.storage.etcd`) and the images it builds
  and pushes (`images`). No component may import the launcher.

One component uses others' code as a library, as upstream's does: the cluster autoscaler
(`autoscaler`) runs the scheduler's Filter plugins to simulate where pending pods would fit
(upstream's cluster-autoscaler builds on the scheduler framework's packages), and its node
group is hollow kubelets in its own process (upstream's kubemark provider). It still
reaches the scheduler and the kubelets that run only through the API server
(LIBRARY_IMPORTS). Its other node group, network-namespace nodes, runs the launcher's
`minikube-py autoscaled-node` command as upstream's calls a cloud's API, and imports none
of the launcher; the label both use is in `api`.

Inside a component, a controller's helper modules (`controllers/deployment/sync.py`,
`controllers/job/tracking.py`, ...) take a small Protocol of what they use, never the
controller: none of them imports its package's controller.py, not even for type hints.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "minikube_py"
SHARED = {"api", "client", "cri", "cri_logs", "gen", "lifecycle", "process", "security",
          "streaming", "tracing"}
LAUNCHER = "cluster"
LAUNCHER_IMPORTS = ("minikube_py.apiserver.storage.etcd", "minikube_py.images")
LIBRARY_IMPORTS = {"autoscaler": ("minikube_py.scheduler.framework",
                                   "minikube_py.scheduler.plugins", "minikube_py.kubelet")}
CONTROLLER_PACKAGES = ("controllers/deployment", "controllers/job")


def package_of(module: str) -> str | None:
    """`minikube_py.kubelet.pleg` -> `kubelet`; None for modules outside minikube_py."""
    parts = module.split(".")
    return parts[1] if parts[0] == "minikube_py" and len(parts) > 1 else None


def imports_of(path: Path, package: Path = PACKAGE, *, names: bool = False,
               at_run_time: bool = False) -> list[str]:
    """Every module a source file imports (at its top or inside a function), relative
    imports resolved: `from a import b` gives a (with `names`, a.b too: b may be a
    module). With `at_run_time`, not those of an `if TYPE_CHECKING:` block, which only a
    type checker reads."""
    here = ["minikube_py", *path.relative_to(package).with_suffix("").parts]
    found: list[str] = []
    pending: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*here[:-node.level], *([node.module] if node.module else [])]
                            ) if node.level else node.module or ""
            found += [base, *(f"{base}.{alias.name}" for alias in node.names if names)]
        pending += [child for child in ast.iter_child_nodes(node)
                    if not (at_run_time and isinstance(child, ast.If)
                            and "TYPE_CHECKING" in ast.unparse(child.test))]
    return found


def minikube_py_imports(path: Path, package: Path = PACKAGE) -> list[str]:
    """imports_of, the modules of minikube_py alone."""
    return [name for name in imports_of(path, package) if name.startswith("minikube_py")]


def launcher_may_import(module: str) -> bool:
    """Whether the launcher may import this component module (see LAUNCHER_IMPORTS)."""
    return any(module == allowed or module.startswith(allowed + ".")
               for allowed in LAUNCHER_IMPORTS)


def violations(package: Path = PACKAGE) -> list[str]:
    """Imports from a component into another component or into the launcher, and the
    launcher's imports of component code beyond LAUNCHER_IMPORTS."""
    found = []
    for path in sorted(package.rglob("*.py")):
        source = package_of("minikube_py." + ".".join(path.relative_to(package).parts))
        if source in SHARED or source is None:
            continue
        for module in minikube_py_imports(path, package):
            target = package_of(module)
            if target is None or target in SHARED or target == source:
                continue
            if source == LAUNCHER and launcher_may_import(module):
                continue
            if module.startswith(LIBRARY_IMPORTS.get(source, ())):
                continue
            found.append(f"{path.relative_to(package.parent)} imports {module}")
    return found


def back_references(package: Path = PACKAGE) -> list[str]:
    """Helper modules of a CONTROLLER_PACKAGES package that import its controller.py, or
    the package itself (whose __init__ imports controller.py), type-checking imports too."""
    found = []
    for folder in CONTROLLER_PACKAGES:
        name = "minikube_py." + folder.replace("/", ".")
        for path in sorted((package / folder).glob("*.py")):
            if path.name in ("controller.py", "__init__.py"):
                continue
            for module in minikube_py_imports(path, package):
                if module in (name, f"{name}.controller") or module.startswith(
                        f"{name}.controller."):
                    found.append(f"{path.relative_to(package.parent)} imports {module}")
    return found


def test_no_component_imports_another_or_the_launcher() -> None:
    assert violations() == []


def test_the_shared_libraries_import_no_component() -> None:
    found = []
    for shared in ("api", "client"):
        for path in sorted((PACKAGE / shared).rglob("*.py")):
            for module in minikube_py_imports(path):
                target = package_of(module)
                if target not in SHARED and target is not None:
                    found.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    assert found == []


def test_the_check_finds_imports_across_components_and_beyond_what_the_launcher_may(
        tmp_path: Path) -> None:
    package = tmp_path / "minikube_py"
    for folder, source in (
            ("scheduler", "from minikube_py.kubelet.pleg import X\n"),
            ("proxy", "from ..apiserver import store\n"),
            ("kubelet", "from minikube_py.cluster.node import start_node\n"),
            ("cluster", "from minikube_py.cluster.runtime_setup import Containerd\n"
                        "from minikube_py.images.catalog import CATALOG\n"
                        "from minikube_py.scheduler.scheduler import Scheduler\n"),
            ("controllers", "from minikube_py.client.rest import Client\n")):
        (package / folder).mkdir(parents=True)
        (package / folder / "module.py").write_text(source)
    assert violations(package) == [
        "minikube_py/cluster/module.py imports minikube_py.scheduler.scheduler",
        "minikube_py/kubelet/module.py imports minikube_py.cluster.node",
        "minikube_py/proxy/module.py imports minikube_py.apiserver",
        "minikube_py/scheduler/module.py imports minikube_py.kubelet.pleg"]


def test_controller_helpers_do_not_import_their_controller() -> None:
    assert back_references() == []


def test_the_check_finds_helpers_that_import_their_controller(tmp_path: Path) -> None:
    package = tmp_path / "minikube_py"
    for folder, module, source in (
            ("controllers/deployment", "sync.py",
             "from typing import TYPE_CHECKING\n"
             "if TYPE_CHECKING:\n"
             "    from minikube_py.controllers.deployment.controller import X\n"),
            ("controllers/deployment", "controller.py", "from .sync import f\n"),
            ("controllers/deployment", "__init__.py", "from .controller import X\n"),
            ("controllers/job", "tracking.py", "from . import controller\n"),
            ("controllers/job", "indexed.py", "from .pods import uid_of\n")):
        (package / folder).mkdir(parents=True, exist_ok=True)
        (package / folder / module).write_text(source)
    assert back_references(package) == [
        "minikube_py/controllers/deployment/sync.py imports "
        "minikube_py.controllers.deployment.controller",
        "minikube_py/controllers/job/tracking.py imports minikube_py.controllers.job"]
