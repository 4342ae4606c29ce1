"""SPDY/3.1 framing and sessions (minikube_py/streaming/spdy.py): the bytes on the wire,
the shared header compression, and two sessions talking over a real socket pair."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import struct
import zlib

import pytest

from minikube_py.streaming import spdy
from minikube_py.streaming.bytestreams import TcpStream


def test_the_dictionary_is_spdy3s_byte_for_byte() -> None:
    # the digest of the dictionary in the draft-3 specification (and spdystream's copy)
    assert len(spdy.DICTIONARY) == 1423
    assert hashlib.sha256(spdy.DICTIONARY).hexdigest() == (
        "51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02")
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b",utf-,*,enq=0.")


def test_a_data_frame_is_stream_id_flags_length_and_the_bytes() -> None:
    wire = spdy.FrameCodec().encode(spdy.Data(5, b"hello", fin=True))
    assert wire == b"\x00\x00\x00\x05" + b"\x01\x00\x00\x05" + b"hello"


def test_a_control_frame_carries_the_control_bit_version_and_type() -> None:
    wire = spdy.FrameCodec().encode(spdy.Ping(7))
    assert wire == b"\x80\x03\x00\x06" + b"\x00\x00\x00\x04" + b"\x00\x00\x00\x07"
    wire = spdy.FrameCodec().encode(spdy.RstStream(3, spdy.CANCEL))
    assert wire[:8] == b"\x80\x03\x00\x03\x00\x00\x00\x08"
    assert struct.unpack(">II", wire[8:]) == (3, spdy.CANCEL)


def test_header_blocks_are_zlib_with_the_dictionary_and_one_context_per_direction() -> None:
    writer, reader = spdy.FrameCodec(), spdy.FrameCodec()
    first = writer.encode(spdy.SynStream(1, {"streamType": "error", "port": "80",
                                             "requestID": "0"}))
    second = writer.encode(spdy.SynStream(3, {"streamType": "data", "port": "80",
                                              "requestID": "0"}))
    # the block inflates with the dictionary into count, then length-prefixed pairs
    inflater = zlib.decompressobj(zdict=spdy.DICTIONARY)
    block = inflater.decompress(first[18:])
    assert block[:4] == b"\x00\x00\x00\x03"
    assert b"\x00\x00\x00\x0astreamtype\x00\x00\x00\x05error" in block
    # the second block leans on the first's context: shorter, and only readable after it
    assert len(second) < len(first)
    frames = reader.feed(first + second)
    assert frames == [
        spdy.SynStream(1, {"streamtype": "error", "port": "80", "requestid": "0"}),
        spdy.SynStream(3, {"streamtype": "data", "port": "80", "requestid": "0"})]


def test_every_frame_survives_a_round_trip_fed_one_byte_at_a_time() -> None:
    frames: list[spdy.Frame] = [
        spdy.SynStream(1, {"streamtype": "stdin"}, priority=3, fin=True),
        spdy.SynReply(1, {"x": "y"}),
        spdy.HeadersFrame(1, {"a": "b"}, fin=True),
        spdy.Data(1, b"x" * 70000),
        spdy.Data(1, b"", fin=True),
        spdy.RstStream(1, spdy.PROTOCOL_ERROR),
        spdy.Ping(2),
        spdy.GoAway(7, 0),
    ]
    writer, reader = spdy.FrameCodec(), spdy.FrameCodec()
    wire = b"".join(writer.encode(frame) for frame in frames)
    decoded = []
    for offset in range(len(wire)):
        decoded += reader.feed(wire[offset:offset + 1])
    assert decoded == frames


def test_settings_and_window_updates_are_read_and_ignored() -> None:
    settings = b"\x80\x03\x00\x04\x00\x00\x00\x0c" + struct.pack(">IBBHI", 1, 0, 0, 7, 65536)
    window = b"\x80\x03\x00\x09\x00\x00\x00\x08" + struct.pack(">II", 1, 1024)
    assert spdy.FrameCodec().feed(settings + window) == [
        spdy.Ignored(spdy.SETTINGS), spdy.Ignored(spdy.WINDOW_UPDATE)]


def test_another_spdy_version_is_a_protocol_error() -> None:
    with pytest.raises(spdy.ProtocolError, match="version 2"):
        spdy.FrameCodec().feed(b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01")


async def _pair() -> tuple[spdy.Connection, spdy.Connection]:
    left, right = socket.socketpair()
    client = spdy.Connection(TcpStream(*await asyncio.open_unix_connection(sock=left)),
                             client=True)
    server = spdy.Connection(TcpStream(*await asyncio.open_unix_connection(sock=right)),
                             client=False)
    await client.__aenter__()
    await server.__aenter__()
    return client, server


async def test_a_stream_carries_bytes_both_ways_and_half_closes() -> None:
    client, server = await _pair()
    try:
        opening = asyncio.create_task(client.open_stream({"streamType": "stdin"}))
        accepted = await server.accept()
        assert accepted is not None and accepted.id == 1
        assert spdy.stream_type(accepted.headers) == "stdin"
        await accepted.reply()
        stream = await opening
        await stream.write(b"ping " * 20000)
        await stream.close()
        # the server reads everything, then the end; its own direction stays open
        assert await accepted.read_all() == b"ping " * 20000
        await accepted.write(b"pong")
        assert await stream.read() == b"pong"
        await accepted.close()
        assert await stream.read() == b""
    finally:
        await client.close()
        await server.close()


async def test_streams_are_numbered_odd_by_the_client_and_reset_wakes_the_reader() -> None:
    client, server = await _pair()
    try:
        async def serve() -> None:
            while (stream := await server.accept()) is not None:
                await stream.reply()

        serving = asyncio.create_task(serve())
        first = await client.open_stream({"streamType": "error"})
        second = await client.open_stream({"streamType": "data"})
        assert (first.id, second.id) == (1, 3)
        reading = asyncio.create_task(server.streams[3].read())
        await second.reset()
        async with asyncio.timeout(5):
            assert await reading == b""
        serving.cancel()
    finally:
        await client.close()
        await server.close()


async def test_pings_are_echoed_by_the_other_end() -> None:
    client, server = await _pair()
    try:
        async with asyncio.timeout(5):
            await client.ping()
        async with asyncio.timeout(5):
            await server.ping()
    finally:
        await client.close()
        await server.close()


async def test_goaway_ends_the_session_and_every_stream_reads_its_end() -> None:
    client, server = await _pair()
    try:
        opening = asyncio.create_task(client.open_stream({"streamType": "stdout"}))
        accepted = await server.accept()
        assert accepted is not None
        await accepted.reply()
        stream = await opening
        await server.close()
        async with asyncio.timeout(5):
            assert await stream.read() == b""
        async with asyncio.timeout(5):
            await client.closed.wait()
        with pytest.raises(ConnectionResetError):
            await client.open_stream({"streamType": "stderr"})
    finally:
        await client.close()
