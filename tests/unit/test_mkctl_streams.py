"""The pure parts of mkctl's pod commands: WebSocket framing (websocket.py), port
specifications (port-forward), --for conditions (wait) and the exit status of a remote
command (remotecommand.py)."""

from __future__ import annotations

import io
import socket

import pytest

from minikube_py.mkctl import websocket
from minikube_py.mkctl.commands.port_forward import parse_ports
from minikube_py.mkctl.commands.wait import parse_condition
from minikube_py.mkctl.errors import Exit, MkctlError
from minikube_py.mkctl.remotecommand import finish
from minikube_py.mkctl.websocket import BINARY, CLOSE, PING, PONG, TEXT, WebSocket


def test_a_masked_frame_is_rfc_6455s_example() -> None:
    """RFC 6455 5.7: "Hello" masked with 37 fa 21 3d."""
    frame = websocket.encode_frame(TEXT, b"Hello", bytes.fromhex("37fa213d"))
    assert frame == bytes.fromhex("818537fa213d7f9f4d5158")
    decoded, used = websocket.decode_frame(frame)
    assert decoded == websocket.Frame(True, TEXT, b"Hello") and used == len(frame)


@pytest.mark.parametrize("length", [0, 125, 126, 65535, 65536, 70000])
def test_every_length_encoding_decodes_back(length: int) -> None:
    payload = bytes(range(256)) * (length // 256) + bytes(length % 256)
    frame = websocket.encode_frame(BINARY, payload)
    assert websocket.decode_frame(frame) == ((True, BINARY, payload), len(frame))


def test_a_frame_cut_anywhere_is_incomplete() -> None:
    frame = websocket.encode_frame(BINARY, b"x" * 300)
    for end in range(len(frame)):
        assert websocket.decode_frame(frame[:end]) is None


def _server_frame(opcode: int, payload: bytes, fin: bool = True) -> bytes:
    """A frame as a server sends it: unmasked."""
    assert len(payload) < 126
    return bytes([(0x80 if fin else 0) | opcode, len(payload)]) + payload


def test_pings_are_answered_fragments_joined_and_a_close_ends_the_stream() -> None:
    ours, theirs = socket.socketpair()
    client = WebSocket(ours, "v5.channel.k8s.io", b"")
    theirs.sendall(_server_frame(PING, b"hi") + _server_frame(BINARY, b"\x01ab", fin=False)
                   + _server_frame(0, b"cd") + _server_frame(CLOSE, b"\x03\xe8"))
    assert client.receive() == b"\x01abcd"
    assert client.receive() is None and client.closed
    answered = theirs.recv(1000)
    pong, used = websocket.decode_frame(answered)
    assert pong == (True, PONG, b"hi")
    assert websocket.decode_frame(answered[used:])[0].opcode == CLOSE
    client.close()
    theirs.close()


def test_ports_as_kubectl_parses_them() -> None:
    assert parse_ports(["8080:80", ":443", "5000"]) == [(8080, 80), (0, 443), (5000, 5000)]
    for spec, message in [
            ("a:80", "error parsing local port 'a': strconv.ParseUint: parsing \"a\": "
                     "invalid syntax"),
            ("1:2:3", "invalid port format '1:2:3'"),
            ("80:70000", "error parsing remote port '70000': strconv.ParseUint: parsing "
                         "\"70000\": value out of range"),
            ("0", "remote port must be > 0")]:
        with pytest.raises(MkctlError, match="^" + message.replace("(", r"\(") + "$"):
            parse_ports([spec])


def test_conditions_meet_as_kubectl_compares_them() -> None:
    pod = {"metadata": {"generation": 2},
           "status": {"phase": "Running", "conditions": [
               {"type": "Ready", "status": "True"},
               {"type": "Stale", "status": "True", "observedGeneration": 1}]}}
    assert parse_condition("condition=ready").met(pod)  # names and values without case
    assert parse_condition("condition=Ready=TRUE").met(pod)
    assert not parse_condition("condition=Ready=False").met(pod)
    assert not parse_condition("condition=Stale").met(pod)  # for an older generation
    assert parse_condition("jsonpath={.status.phase}=Running").met(pod)
    assert parse_condition("jsonpath=.status.phase").met(pod)
    assert not parse_condition("jsonpath={.status.missing}").met(pod)
    with pytest.raises(MkctlError, match="nested object"):
        parse_condition("jsonpath={.status}=x").met(pod)
    with pytest.raises(MkctlError, match='unrecognized condition: "ready"'):
        parse_condition("ready")


def test_the_remote_commands_exit_code_becomes_ours() -> None:
    class Inv:
        out, err = io.StringIO(), io.StringIO()

    finish(Inv, {"status": "Success"})  # type: ignore[arg-type]
    with pytest.raises(Exit) as left:
        finish(Inv, {"status": "Failure", "reason": "NonZeroExitCode",  # type: ignore[arg-type]
                     "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}})
    assert left.value.code == 3
    assert Inv.err.getvalue() == "command terminated with exit code 3\n"
    with pytest.raises(MkctlError, match="error executing remote command: boom"):
        finish(Inv, {"status": "Failure", "message": "boom"})  # type: ignore[arg-type]
