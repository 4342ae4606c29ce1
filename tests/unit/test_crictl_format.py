"""crictl's formats, held to the Go libraries cri-tools prints with (go-units, text/tabwriter,
encoding/json, sigs.k8s.io/yaml), and the pure parts of exec and of its configuration."""

from __future__ import annotations

import io
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from minikube_py.crictl import display
from minikube_py.crictl.crictl_config import image_service, parse_go_duration, resolve
from minikube_py.crictl.execute import escape_proxy, exec_url
from minikube_py.streaming.remotecommand import CodeExitError, RemoteCommandError, decode_status


@pytest.mark.parametrize(("seconds", "text"), [
    (0.4, "Less than a second"), (1.9, "1 second"), (59, "59 seconds"),
    (60, "About a minute"), (119, "About a minute"), (120, "2 minutes"),
    (59 * 60 + 59, "59 minutes"), (3600, "About an hour"), (5400, "2 hours"),
    (47 * 3600, "47 hours"), (48 * 3600, "2 days"), (14 * 86400, "2 weeks"),
    (60 * 86400, "2 months"), (731 * 86400, "2 years"),
])
def test_human_duration_is_go_units(seconds: float, text: str) -> None:
    assert display.human_duration(seconds) == text


@pytest.mark.parametrize(("size", "text"), [
    (0, "0B"), (999, "999B"), (1000, "1kB"), (1_032_000, "1.03MB"), (315_400, "315kB"),
    (4_500_000_000, "4.5GB"),
])
def test_human_size_is_go_units_with_three_digits(size: int, text: str) -> None:
    assert display.human_size(size) == text


def test_ids_and_image_digests_are_cut_to_13_characters() -> None:
    digest = "sha256:" + "ab" * 32
    assert display.truncated_id("0123456789abcdef") == "0123456789abc"
    assert display.truncated_id(digest, "sha256:") == "ab" * 6 + "a"
    assert display.truncated_image(digest) == "ab" * 6 + "a"
    assert display.truncated_image("localhost/busybox:1.36") == "localhost/busybox:1.36"


def test_table_columns_are_at_least_20_wide_and_the_last_is_not_padded() -> None:
    table = display.Table()
    table.add_row(["A", "LONG HEADER", "LAST"])
    table.add_row(["a-cell-wider-than-twenty", "b", "c"])
    with redirect_stdout(io.StringIO()) as out:
        table.flush()
    assert out.getvalue().splitlines() == [
        "A" + " " * 26 + "LONG HEADER" + " " * 9 + "LAST",
        "a-cell-wider-than-twenty   b" + " " * 19 + "c"]


@pytest.fixture
def local_zone() -> Iterator[Callable[[str], None]]:
    """Set the process's time zone (TZ) for a test, and put it back after."""
    saved = os.environ.get("TZ")

    def set_zone(zone: str) -> None:
        os.environ["TZ"] = zone
        time.tzset()

    yield set_zone
    if saved is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = saved
    time.tzset()


def test_times_print_in_the_local_zone_as_go_prints_them(
        local_zone: Callable[[str], None]) -> None:
    local_zone("UTC")
    assert display.rfc3339_nano(1_700_000_000_120_000_000) == "2023-11-14T22:13:20.12Z"
    assert display.rfc3339_nano(1_700_000_000_000_000_000) == "2023-11-14T22:13:20Z"
    assert display.go_time_string(1_700_000_000_000_000_005) == \
        "2023-11-14 22:13:20.000000005 +0000 UTC"
    local_zone("CET-1")
    assert display.rfc3339_nano(1_700_000_000_500_000_000) == "2023-11-14T23:13:20.5+01:00"
    assert display.go_time_string(1_700_000_000_000_000_000) == \
        "2023-11-14 23:13:20 +0100 CET"


def test_json_is_encoding_json_sorted_and_html_escaped() -> None:
    assert display.go_json({"b": "x > y && z", "a": [], "c": {}}) == (
        '{\n  "a": [],\n  "b": "x \\u003e y \\u0026\\u0026 z",\n  "c": {}\n}')


def test_yaml_quotes_strings_that_would_read_back_as_other_types() -> None:
    assert display.json_to_yaml({"createdAt": "1700000000", "b": "true", "c": "text",
                                 "d": "", "items": [{"x": 1}]}) == (
        'b: "true"\nc: text\ncreatedAt: "1700000000"\nd: ""\nitems:\n- x: 1\n')


def test_status_info_values_are_json_objects_or_unquoted_strings() -> None:
    assert display.status_data({"id": "x"}, {"config": '{"a": 1}', "golang": '"go1.19"'}) \
        == {"status": {"id": "x"}, "config": {"a": 1}, "golang": "go1.19"}


def test_go_durations_parse_as_go_does() -> None:
    assert parse_go_duration("2s") == 2.0
    assert parse_go_duration("1m30s") == 90.0
    assert parse_go_duration("500ms") == 0.5
    assert parse_go_duration("0") == 0.0
    with pytest.raises(ValueError):
        parse_go_duration("2")


def test_flags_win_over_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "crictl.yaml"
    config.write_text("runtime-endpoint: unix:///from/file.sock\ntimeout: 7\n")
    from_file = resolve(config_path=str(config), config_is_set=True, runtime_endpoint=None,
                        image_endpoint=None, timeout=None, debug=None, max_retries=None)
    assert (from_file.runtime_endpoint, from_file.image_endpoint, from_file.timeout,
            from_file.runtime_endpoint_is_set) == (
        "unix:///from/file.sock", "unix:///from/file.sock", 7.0, True)
    flagged = resolve(config_path=str(config), config_is_set=True,
                      runtime_endpoint="unix:///flag.sock", image_endpoint=None, timeout=0.0,
                      debug=None, max_retries=0)
    assert (flagged.runtime_endpoint, flagged.timeout, flagged.max_retries) == (
        "unix:///flag.sock", 2.0, 0)
    images_only = resolve(config_path=str(tmp_path / "absent.yaml"), config_is_set=False,
                          runtime_endpoint=None, image_endpoint="unix:///images.sock",
                          timeout=None, debug=None, max_retries=None)
    assert not images_only.runtime_endpoint_is_set  # the runtime: the default endpoints
    assert (image_service(images_only).runtime_endpoint,
            image_service(images_only).runtime_endpoint_is_set) == ("unix:///images.sock", True)
    assert image_service(flagged).runtime_endpoint == "unix:///flag.sock"


async def _chunks(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


@pytest.mark.parametrize(("chunks", "passed"), [
    ((b"ls\r", b"exit\r"), b"ls\rexit\r"),
    ((b"ab\x10\x11cd",), b"ab"),
    ((b"ab\x10", b"\x11cd"), b"ab"),  # the keys split across two reads
    ((b"ab\x10", b"x"), b"ab\x10x"),  # ctrl-p alone is passed on
])
async def test_the_detach_keys_end_the_input(chunks: tuple[bytes, ...], passed: bytes) -> None:
    assert b"".join([c async for c in escape_proxy(_chunks(*chunks), b"\x10\x11")]) == passed


def test_a_url_without_host_points_at_the_kubelet() -> None:
    assert exec_url("/exec/abc") == "http://127.0.0.1:10250/exec/abc"
    assert exec_url("http://127.0.0.1:4242/exec/abc") == "http://127.0.0.1:4242/exec/abc"


def test_the_error_stream_status_decodes_as_client_go_does() -> None:
    decode_status(b"")
    decode_status(b'{"status": "Success"}')
    with pytest.raises(CodeExitError) as exited:
        decode_status(b'{"status": "Failure", "reason": "NonZeroExitCode", "details": '
                      b'{"causes": [{"reason": "ExitCode", "message": "42"}]}}')
    assert exited.value.code == 42 and str(exited.value) == "command terminated with exit code 42"
    with pytest.raises(RemoteCommandError, match="^executable file not found$"):
        decode_status(b'{"status": "Failure", "message": "executable file not found"}')
