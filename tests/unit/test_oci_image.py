"""OCI image archives: layout, content addressing, image config, and the shipped catalog."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minikube_py.cluster.cli import main
from minikube_py.images.catalog import (
    BUSYBOX_BINARY,
    CATALOG,
    ECHO,
    WGET_SCRIPT,
    busybox_layer,
    is_static_executable,
)
from minikube_py.images.oci import (
    CONFIG_MEDIA_TYPE,
    GZIP_LAYER_MEDIA_TYPE,
    INDEX_MEDIA_TYPE,
    LAYER_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    ImageArchive,
    ImageConfig,
    Layer,
    write_oci_archive,
)
from minikube_py.images.programs import welcome_page

needs_busybox = pytest.mark.skipif(not BUSYBOX_BINARY.is_file(), reason="busybox-static missing")

# tarfile's filters came with Python 3.11.4; without one, 3.11 extracts as "fully_trusted"
TRUSTED = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}


def small_layer() -> Layer:
    layer = Layer()
    layer.add_file("/bin/tool", b"#!/bin/sh\necho hi\n", 0o755)
    layer.add_symlink("/bin/sh", "tool")
    layer.add_directory("/tmp", 0o1777)
    layer.add_file("/etc/deep/nested/file", b"x")
    return layer


def read_archive(path: Path) -> dict[str, bytes]:
    """Every regular file of an archive, by name."""
    with tarfile.open(path) as archive:
        return {member.name: archive.extractfile(member).read()  # type: ignore[union-attr]
                for member in archive.getmembers() if member.isfile()}


def blob(files: dict[str, bytes], descriptor: dict[str, Any]) -> bytes:
    return files["blobs/sha256/" + descriptor["digest"].removeprefix("sha256:")]


def write_small(tmp_path: Path, **options: Any) -> ImageArchive:
    config = ImageConfig(entrypoint=("/bin/tool",), cmd=("--flag",), working_dir="/tmp",
                         env=("PATH=/bin", "MODE=test"), exposed_ports=("8080/tcp",))
    return write_oci_archive(tmp_path / "small.tar", "localhost/small:1.0", small_layer(),
                             config, **options)


def test_archive_has_the_oci_image_layout(tmp_path: Path) -> None:
    files = read_archive(write_small(tmp_path).path)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads(files["index.json"])
    assert (index["schemaVersion"], index["mediaType"]) == (2, INDEX_MEDIA_TYPE)
    blobs = {name: data for name, data in files.items() if name.startswith("blobs/")}
    assert len(blobs) == 3  # manifest, config, one layer
    for name, data in blobs.items():
        assert name == f"blobs/sha256/{hashlib.sha256(data).hexdigest()}"


def test_every_descriptor_matches_its_blob_digest_and_size(tmp_path: Path) -> None:
    written = write_small(tmp_path)
    files = read_archive(written.path)
    (entry,) = json.loads(files["index.json"])["manifests"]
    manifest_bytes = blob(files, entry)
    manifest = json.loads(manifest_bytes)
    descriptors = [entry, manifest["config"], *manifest["layers"]]
    for descriptor in descriptors:
        data = blob(files, descriptor)
        assert descriptor["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
        assert descriptor["size"] == len(data)
    assert entry["mediaType"] == MANIFEST_MEDIA_TYPE
    assert manifest["config"]["mediaType"] == CONFIG_MEDIA_TYPE
    assert written.manifest_digest == entry["digest"]
    assert written.config_digest == manifest["config"]["digest"]


def test_index_names_the_image_for_oci_and_containerd(tmp_path: Path) -> None:
    files = read_archive(write_small(tmp_path).path)
    (entry,) = json.loads(files["index.json"])["manifests"]
    assert entry["annotations"] == {"org.opencontainers.image.ref.name": "localhost/small:1.0",
                                    "io.containerd.image.name": "localhost/small:1.0"}
    assert entry["platform"]["os"] == "linux"


def test_a_layer_ships_as_a_plain_tar_whose_digest_is_its_diff_id(tmp_path: Path) -> None:
    files = read_archive(write_small(tmp_path).path)
    (entry,) = json.loads(files["index.json"])["manifests"]
    manifest = json.loads(blob(files, entry))
    config = json.loads(blob(files, manifest["config"]))
    (layer,) = manifest["layers"]
    assert layer["mediaType"] == LAYER_MEDIA_TYPE
    assert config["rootfs"]["diff_ids"] == [layer["digest"]]


@pytest.mark.parametrize(("compress", "media_type"), [
    (True, GZIP_LAYER_MEDIA_TYPE),
    (False, LAYER_MEDIA_TYPE),
])
def test_diff_id_is_the_digest_of_the_uncompressed_layer(
        tmp_path: Path, compress: bool, media_type: str) -> None:
    files = read_archive(write_small(tmp_path, compress=compress).path)
    (entry,) = json.loads(files["index.json"])["manifests"]
    manifest = json.loads(blob(files, entry))
    config = json.loads(blob(files, manifest["config"]))
    (layer,) = manifest["layers"]
    data = blob(files, layer)
    plain = gzip.decompress(data) if compress else data
    assert layer["mediaType"] == media_type
    assert config["rootfs"] == {"type": "layers",
                                "diff_ids": ["sha256:" + hashlib.sha256(plain).hexdigest()]}


def test_config_carries_the_default_command_env_workdir_and_ports(tmp_path: Path) -> None:
    files = read_archive(write_small(tmp_path, architecture="arm64").path)
    (entry,) = json.loads(files["index.json"])["manifests"]
    config = json.loads(blob(files, json.loads(blob(files, entry))["config"]))
    assert (config["os"], config["architecture"]) == ("linux", "arm64")
    assert entry["platform"] == {"os": "linux", "architecture": "arm64"}
    assert config["config"] == {"Entrypoint": ["/bin/tool"], "Cmd": ["--flag"],
                                "Env": ["PATH=/bin", "MODE=test"], "WorkingDir": "/tmp",
                                "ExposedPorts": {"8080/tcp": {}}}


def test_layer_adds_parent_directories_before_children_owned_by_root() -> None:
    with tarfile.open(fileobj=io.BytesIO(small_layer().tar())) as layer:
        members = {m.name: m for m in layer.getmembers()}
        names = [m.name for m in layer.getmembers()]
    assert names == ["bin", "bin/sh", "bin/tool", "etc", "etc/deep", "etc/deep/nested",
                     "etc/deep/nested/file", "tmp"]
    assert members["etc/deep"].isdir() and members["etc/deep"].mode == 0o755
    assert members["tmp"].mode == 0o1777
    assert members["bin/tool"].mode == 0o755 and members["etc/deep/nested/file"].mode == 0o644
    assert members["bin/sh"].issym() and members["bin/sh"].linkname == "tool"
    assert {(m.uid, m.gid, m.mtime) for m in members.values()} == {(0, 0, 0)}


def test_the_same_image_twice_has_the_same_digests(tmp_path: Path) -> None:
    first = write_small(tmp_path / "a")
    second = write_small(tmp_path / "b")
    assert (first.manifest_digest, first.config_digest) == (
        second.manifest_digest, second.config_digest)
    assert first.path.read_bytes() == second.path.read_bytes()


@pytest.mark.parametrize("name", ["localhost/echo", "echo:", "Localhost/Echo:1.0",
                                  "localhost:5000/echo", ""])
def test_an_archive_needs_a_lower_case_name_with_a_tag(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="must be a lower-case repository and a tag"):
        write_oci_archive(tmp_path / "x.tar", name, small_layer(), ImageConfig())


def test_a_layer_path_must_name_something_inside_the_image() -> None:
    with pytest.raises(ValueError):
        Layer().add_directory("/")


# -- the shipped images ----------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "archive_name"), [
    (CATALOG[0], "pause-3.9.tar"), (CATALOG[1], "busybox-1.36.tar"), (ECHO, "echo-1.0.tar"),
])
def test_archive_file_names_follow_repository_and_tag(spec: Any, archive_name: str) -> None:
    assert spec.archive_name == archive_name


@pytest.mark.parametrize(("binary", "static"), [
    (BUSYBOX_BINARY, True),
    (Path(sys.executable).resolve(), False),
    (Path("/bin/sh"), False),
])
def test_only_a_static_busybox_can_be_the_whole_image(binary: Path, static: bool) -> None:
    if not binary.is_file():
        pytest.skip(f"{binary} missing")
    assert is_static_executable(binary.resolve().read_bytes()) is static


def test_a_script_is_not_a_static_executable() -> None:
    assert not is_static_executable(b"#!/bin/sh\nexit 0\n")


@needs_busybox
def test_busybox_layer_links_the_applets_the_images_use() -> None:
    with tarfile.open(fileobj=io.BytesIO(busybox_layer().tar())) as layer:
        members = {m.name: m for m in layer.getmembers()}
    for applet in ("sh", "nc", "httpd", "sleep", "cat", "echo", "ls", "env", "ps",
                   "hostname", "ip", "awk", "timeout"):
        assert members[f"bin/{applet}"].linkname == "busybox", applet
    assert members["bin/wget"].isfile() and members["bin/wget"].mode == 0o755
    assert layer_file(busybox_layer(), "bin/wget") == WGET_SCRIPT
    assert members["bin/busybox"].mode == 0o755
    assert members["tmp"].mode == 0o1777
    assert "root:x:0:0" in layer_file(busybox_layer(), "etc/passwd")


@pytest.fixture
def image_wget(tmp_path: Path) -> list[str]:
    """The image's /bin/wget, run by busybox's sh with busybox on its PATH, as in a pod."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "busybox").symlink_to(BUSYBOX_BINARY)
    script = tmp_path / "bin" / "wget"
    script.write_text(WGET_SCRIPT)
    return [str(BUSYBOX_BINARY), "sh", str(script)]


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A listener that takes connections and never answers: a path a policy drops."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/"


@pytest.fixture
def answering_server() -> Iterator[str]:
    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the handler's name)
            self.send_response(200)
            self.send_header("Content-Length", "6")
            self.end_headers()
            self.wfile.write(b"hello\n")

        do_HEAD = do_GET  # noqa: N815

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@needs_busybox
@pytest.mark.parametrize("option", [["-T", "1"], ["-T1"], ["--timeout=1"], ["--timeout", "1"]])
def test_the_images_wget_gives_up_after_its_timeout_as_busybox_does(
        image_wget: list[str], silent_server: str, answering_server: str,
        option: list[str]) -> None:
    """Debian's busybox has no wget -T (and crashes on it): the image's wget takes it in
    each of its spellings, answers as usual, and fails with busybox's own line when no
    answer comes within it."""
    env = {"PATH": str(Path(image_wget[2]).parent)}
    answered = subprocess.run([*image_wget, *option, "-qO-", answering_server], env=env,
                              capture_output=True, text=True, timeout=30)
    assert (answered.returncode, answered.stdout) == (0, "hello\n")
    spider = subprocess.run([*image_wget, "--spider", *option, answering_server], env=env,
                            capture_output=True, text=True, timeout=30)
    assert spider.returncode == 0, spider.stderr
    silent = subprocess.run([*image_wget, *option, "-qO-", silent_server], env=env,
                            capture_output=True, text=True, timeout=30)
    assert (silent.returncode, silent.stderr) == (1, "wget: download timed out\n")


@needs_busybox
def test_the_images_wget_without_a_timeout_is_busyboxs(image_wget: list[str],
                                                       answering_server: str) -> None:
    env = {"PATH": str(Path(image_wget[2]).parent)}
    answered = subprocess.run([*image_wget, "-qO-", answering_server], env=env,
                              capture_output=True, text=True, timeout=30)
    assert (answered.returncode, answered.stdout) == (0, "hello\n")
    refused = subprocess.run([*image_wget, "-qO-", "http://127.0.0.1:1/"], env=env,
                             capture_output=True, text=True, timeout=30)
    assert refused.returncode == 1 and "can't connect to remote host" in refused.stderr


def layer_file(layer: Layer, name: str) -> str:
    with tarfile.open(fileobj=io.BytesIO(layer.tar())) as archive:
        return archive.extractfile(name).read().decode()  # type: ignore[union-attr]


@needs_busybox
@pytest.mark.slow
def test_image_build_command_writes_every_archive(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIKUBE_PY_HOME", str(tmp_path / "no-cluster"))
    main(["image", "build", "--output", str(tmp_path)])
    assert sorted(p.name for p in tmp_path.glob("*.tar")) == [
        "busybox-1.36.tar", "echo-1.0.tar", "nginx-1.14.2.tar", "nginx-1.15.4.tar",
        "nginx-latest.tar", "pause-3.9.tar", "python-3.tar"]
    printed = capsys.readouterr().out
    assert "no cluster registry answers: the archives were not pushed" in printed
    for spec in CATALOG:
        assert f"built {spec.name}: {tmp_path / spec.archive_name}" in printed
        index = json.loads(read_archive(tmp_path / spec.archive_name)["index.json"])
        assert index["manifests"][0]["annotations"]["io.containerd.image.name"] == spec.name


@pytest.mark.parametrize(("args", "message"), [
    (["missing.tar"], "error: no such file: missing.tar"),
    (["{archive}"], "error: no node has a running containerd under {home}/nodes"),
    (["{archive}", "--node", "n1"], "error: node n1 has no running containerd"),
])
def test_image_load_command_says_in_one_line_what_is_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str) -> None:
    monkeypatch.setenv("MINIKUBE_PY_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    archive = write_small(tmp_path).path
    (tmp_path / "nodes" / "n1").mkdir(parents=True)
    (tmp_path / "nodes" / "n1" / "containerd.sock").touch()  # left by a stopped node
    with pytest.raises(SystemExit) as exit_info:
        main(["image", "load", *(arg.format(archive=archive) for arg in args)])
    assert str(exit_info.value.code).startswith(message.format(home=tmp_path))
    assert "\n" not in str(exit_info.value.code)


def test_image_build_command_refuses_a_name_it_does_not_ship(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIKUBE_PY_HOME", str(tmp_path))
    with pytest.raises(SystemExit) as exit_info:
        main(["image", "build", "nginx:latest", "localhost/nope:1.0", "--output", str(tmp_path)])
    message = str(exit_info.value.code)
    assert message.startswith("error: no shipped image named localhost/nope:1.0; the images: ")
    assert "localhost/python-kubernetes:1.0" in message
    assert not list(tmp_path.glob("*.tar")), "nothing is built when one name is wrong"


@needs_busybox
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="chroot needs root")
def test_the_python_kubernetes_image_is_built_on_demand_and_imports_the_client(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the image named is built; its python, alone in its filesystem, imports the
    official client (Debian's python3-kubernetes and everything it depends on)."""
    monkeypatch.setenv("MINIKUBE_PY_HOME", str(tmp_path / "no-cluster"))
    main(["image", "build", "localhost/python-kubernetes:1.0", "--output", str(tmp_path)])
    assert [p.name for p in tmp_path.glob("*.tar")] == ["python-kubernetes-1.0.tar"]
    assert "built localhost/python-kubernetes:1.0: " in capsys.readouterr().out
    files = read_archive(tmp_path / "python-kubernetes-1.0.tar")
    manifest = json.loads(blob(files, json.loads(files["index.json"])["manifests"][0]))
    root = tmp_path / "rootfs"
    with tarfile.open(fileobj=io.BytesIO(blob(files, manifest["layers"][0]))) as layer:
        layer.extractall(root, **TRUSTED)  # type: ignore[arg-type]
    imported = subprocess.run(
        [shutil.which("chroot") or "/usr/sbin/chroot", str(root), "/usr/bin/python3", "-c",
         "from kubernetes import client, config, watch; import kubernetes, yaml; "
         "print(kubernetes.__version__, yaml.__with_libyaml__)"],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.split() == ["22.6.0", "True"]


def test_each_nginx_tag_names_itself_on_the_welcome_page() -> None:
    page = (b"<body>\n<h1>Welcome to nginx!</h1>\n<p>If you see this page</p>\n</body>\n")
    tagged = welcome_page(page, "1.14.2")
    assert tagged == (b"<body>\n<h1>Welcome to nginx!</h1>\n<p>This is minikube-py's image "
                      b"nginx:1.14.2 (Debian's nginx).</p>\n<p>If you see this page</p>\n"
                      b"</body>\n")
    assert welcome_page(page, "1.15.4") != tagged
    with pytest.raises(ValueError, match="no 'Welcome to nginx!' heading"):
        welcome_page(b"<h1>It works!</h1>\n", "1.14.2")
    assert [spec.name for spec in CATALOG if "nginx" in spec.name] == [
        "docker.io/library/nginx:latest", "docker.io/library/nginx:1.14.2",
        "docker.io/library/nginx:1.15.4"]
