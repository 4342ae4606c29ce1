"""`mkctl port-forward`: forward local ports to a pod (kubectl port-forward).

    mkctl port-forward web 8080:80            Forwarding from 127.0.0.1:8080 -> 80
    mkctl port-forward svc/web :80            a free local port, to the Service's target port
    mkctl port-forward deploy/web 8080 9090

The steps of kubectl's portforward.go:
1. the arguments: TYPE/NAME, then ports as LOCAL:REMOTE, :REMOTE (a free local port) or
   PORT (the same both sides);
2. the pod (a Service's or workload's by its selector); a Service's port becomes its
   target port, and a named port the container port of that name; the pod must be Running;
3. one upgrade to the pod, to fail early as kubectl does when it cannot be reached; then
   a listener on 127.0.0.1 and [::1] for each local port, announced on stdout;
4. each connection accepted gets a WebSocket of its own to pods/NAME/portforward?ports=P
   (v4.channel.k8s.io: channel 0 the data, 1 the errors, each opening with the port as two
   bytes), and the bytes go both ways until either end closes. One thread waits on every
   socket with `select`, until Ctrl-C;
5. Ctrl-C (SIGINT) or SIGTERM stops forwarding: every connection, its stream and the
   listeners are closed. Like kubectl (signal.Notify), the command installs its own
   handler, so it stops even when started with SIGINT ignored, as a shell starts a
   background job; after Ctrl-C it exits 0, after SIGTERM it is terminated by the signal,
   as kubectl, which leaves SIGTERM to the default, is. Python runs a handler between two
   steps of the main thread, so a signal that lands just before `select` is entered would
   wait for the next event; the signal itself therefore writes a byte to a socket `select`
   watches (signal.set_wakeup_fd), and `select` returns at once.
"""

from __future__ import annotations

import contextlib
import selectors
import signal
import socket
from types import FrameType

from minikube_py.api import Obj
from minikube_py.mkctl import pods
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import MkctlError
from minikube_py.mkctl.flags import STRINGS, Flag
from minikube_py.mkctl.websocket import WebSocket, connect

PROTOCOL = "v4.channel.k8s.io"
DATA, ERROR = 0, 1
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def parse_ports(specs: list[str]) -> list[tuple[int, int]]:
    """parsePorts: (local, remote) pairs; local 0 asks for a free port."""
    pairs = []
    for spec in specs:
        parts = spec.split(":")
        if len(parts) == 1:
            local, remote = parts[0], parts[0]
        elif len(parts) == 2:
            local, remote = parts[0] or "0", parts[1]
        else:
            raise MkctlError(f"invalid port format '{spec}'")
        local_port = _port(local, "local")
        remote_port = _port(remote, "remote")
        if remote_port == 0:
            raise MkctlError("remote port must be > 0")
        pairs.append((local_port, remote_port))
    return pairs


def _port(text: str, side: str) -> int:
    """strconv.ParseUint(text, 10, 16) with its errors."""
    if not text.isdigit():
        raise MkctlError(f"error parsing {side} port '{text}': strconv.ParseUint: parsing "
                         f'"{text}": invalid syntax')
    if int(text) > 65535:
        raise MkctlError(f"error parsing {side} port '{text}': strconv.ParseUint: parsing "
                         f'"{text}": value out of range')
    return int(text)


def _translate(kind: str, obj: Obj, pod: Obj, specs: list[str]) -> list[str]:
    """Step 2: a Service's ports to the pod's (translateServicePortToTargetPort), a named
    remote port to the container port of that name."""
    translated = []
    for spec in specs:
        local, colon, remote = spec.rpartition(":")
        if not colon:
            local = remote
        if kind == "Service":
            remote = _target_port(obj, pod, remote)
            if not colon and local != remote:
                local = spec
        elif not remote.isdigit():
            remote = str(_named_port(pod, remote))
        translated.append(f"{local}:{remote}" if colon or local != remote else remote)
    return translated


def _target_port(service: Obj, pod: Obj, remote: str) -> str:
    ports = (service.get("spec") or {}).get("ports") or []
    for port in ports:
        if str(port.get("port")) == remote or port.get("name") == remote:
            target = port.get("targetPort", port.get("port"))
            return str(target if isinstance(target, int) or str(target).isdigit()
                       else _named_port(pod, str(target)))
    if not remote.isdigit():
        raise MkctlError(f"Service {service['metadata']['name']} does not have a named port "
                         f"'{remote}'")
    raise MkctlError(f"Service {service['metadata']['name']} does not have a service port "
                     f"{remote}")


def _named_port(pod: Obj, name: str) -> int:
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == name:
                return int(port["containerPort"])
    raise MkctlError(f"Pod '{pod['metadata']['name']}' does not have a named port '{name}'")


class Link:
    """One local connection and its WebSocket to the pod."""

    def __init__(self, connection: socket.socket, stream: WebSocket, local: int,
                 remote: int) -> None:
        self.connection, self.stream, self.local, self.remote = (
            connection, stream, local, remote)
        self.opened: set[int] = set()  # the channels whose port prefix has been read


class Forwarder:
    """Steps 3 to 5: the listeners and every connection, on one selector, until a signal."""

    def __init__(self, inv: Invocation, path: str) -> None:
        self.inv = inv
        self.path = path
        self.selector = selectors.DefaultSelector()
        self.listeners: list[socket.socket] = []
        self.links: dict[int, Link] = {}
        self.stopped_by: int | None = None  # the signal that stopped forwarding
        self._wakeup, self._waker = socket.socketpair()  # wakes `select` for the signal
        self._wakeup.setblocking(False)
        self._waker.setblocking(False)
        self.selector.register(self._wakeup, selectors.EVENT_READ, ("stop",))

    def waker_fd(self) -> int:
        """The socket the signal writes to (set_wakeup_fd), which `select` watches."""
        return self._waker.fileno()

    def stop(self, signum: int, frame: FrameType | None) -> None:
        """Step 5, the signal handler: `serve` returns at its next turn. A read or write of
        a connection that blocks (the rest of a frame not yet come, a peer that does not
        read) would hold that turn back, since Python retries an interrupted call after
        the handler: every connection is shut down here, so that call ends at once."""
        self.stopped_by = signum
        for link in self.links.values():
            for sock in (link.connection, link.stream.sock):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def listen(self, pairs: list[tuple[int, int]], addresses: list[str]) -> None:
        """Step 3: a listener on each address for each pair of ports, announced."""
        for local, remote in pairs:
            self._listen(local, remote, addresses)

    def _listen(self, local: int, remote: int, addresses: list[str]) -> None:
        hosts = [host for address in addresses for host in (
            ("127.0.0.1", "::1") if address == "localhost" else (address,))]
        opened = 0
        for host in hosts:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            listener = socket.socket(family, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                listener.bind((host, local))
            except OSError:
                listener.close()
                continue
            listener.listen(128)
            local = local or listener.getsockname()[1]  # ":80": one free port for both
            shown = f"[{host}]" if family == socket.AF_INET6 else host
            self.inv.out.write(f"Forwarding from {shown}:{local} -> {remote}\n")
            self.selector.register(listener, selectors.EVENT_READ,
                                   ("listener", listener, local, remote))
            self.listeners.append(listener)
            opened += 1
        self.inv.out.flush()
        if not opened:
            raise MkctlError(f"unable to listen on any of the requested ports: "
                             f"[{{{local} {remote}}}]")

    def serve(self) -> None:
        """Step 4, until the command is stopped (Ctrl-C or SIGTERM)."""
        while self.stopped_by is None:
            ready = [("pod", key) for key, link in self.links.items()
                     if link.stream.pending()] or [key.data for key, _ in self.selector.select()]
            for data in ready:
                if self.stopped_by is not None:
                    return
                if data[0] == "stop":  # a signal's byte: its handler runs at the next step
                    self._drain_wakeup()
                    continue
                try:
                    self._handle(data)
                except OSError:
                    if self.stopped_by is None:
                        raise
                    return  # a connection the stop shut down while it was in use

    def _drain_wakeup(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._wakeup.recv(64):
                pass

    def _handle(self, data: tuple) -> None:
        """One ready item of `serve`'s round."""
        if data[0] == "listener":
            self._accept(*data[1:])
        elif data[1] not in self.links:
            return  # dropped earlier in this round
        elif data[0] == "local":
            self._from_local(self.links[data[1]])
        else:
            self._from_pod(self.links[data[1]])

    def _accept(self, listener: socket.socket, local: int, remote: int) -> None:
        connection, _ = listener.accept()
        self.inv.out.write(f"Handling connection for {local}\n")
        self.inv.out.flush()
        try:
            stream = connect(self.inv.client, self.path, [("ports", str(remote))], [PROTOCOL])
        except Exception as error:  # this connection fails; the others go on
            from minikube_py.mkctl.errors import report

            self.inv.err.write(report(error)[0] + "\n")
            connection.close()
            return
        key = connection.fileno()
        self.links[key] = Link(connection, stream, local, remote)
        self.selector.register(connection, selectors.EVENT_READ, ("local", key))
        self.selector.register(stream.sock, selectors.EVENT_READ, ("pod", key))

    def _from_local(self, link: Link) -> None:
        try:
            data = link.connection.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._drop(link)
            return
        link.stream.send(bytes([DATA]) + data)

    def _from_pod(self, link: Link) -> None:
        message = link.stream.receive()
        if message is None:
            self._drop(link)
            return
        channel, data = message[0], message[1:]
        if channel not in link.opened:
            link.opened.add(channel)
            data = data[2:]  # the port, as the channel's first two bytes
        if channel == DATA and data:
            try:
                link.connection.sendall(data)
            except OSError:
                self._drop(link)
        elif channel == ERROR and data:
            self.inv.err.write(f"error: an error occurred forwarding {link.local} -> "
                               f"{link.remote}: {data.decode('utf-8', 'replace')}\n")
            self.inv.err.flush()
            self._drop(link)

    def _drop(self, link: Link) -> None:
        self.links.pop(link.connection.fileno())
        self.selector.unregister(link.connection)
        self.selector.unregister(link.stream.sock)
        link.connection.close()
        link.stream.close()

    def close(self) -> None:
        """Step 5: every connection and its stream, then the listeners."""
        for link in list(self.links.values()):
            self._drop(link)
        for listener in self.listeners:
            listener.close()
        self.selector.close()
        self._wakeup.close()
        self._waker.close()


def run(inv: Invocation) -> None:
    if len(inv.args) < 2:
        raise inv.usage_error("TYPE/NAME and list of ports are required for port-forward")
    namespace, _ = inv.namespace()
    kind, obj = pods.resolve(inv, inv.args[0], namespace)
    pod = obj if kind == "Pod" else pods.pod_selected(inv, kind, obj, namespace)[0]
    phase = (pod.get("status") or {}).get("phase", "")
    if phase != "Running":
        raise MkctlError("unable to forward port because pod is not running. Current "
                         f"status={phase}")
    pairs = parse_ports(_translate(kind, obj, pod, inv.args[1:]))
    path = f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}/portforward"
    forwarder = Forwarder(inv, path)
    previous = {signum: signal.signal(signum, forwarder.stop) for signum in STOP_SIGNALS}
    previous_wakeup = signal.set_wakeup_fd(forwarder.waker_fd())
    try:
        try:  # kubectl upgrades before it listens: a pod it cannot reach fails here
            connect(inv.client, path, [("ports", str(pairs[0][1]))], [PROTOCOL]).close()
        except MkctlError as error:
            raise MkctlError(f"error upgrading connection: {error}") from None
        if forwarder.stopped_by is None:
            forwarder.listen(pairs, inv.flags["address"])
            forwarder.serve()
    finally:
        signal.set_wakeup_fd(previous_wakeup)
        forwarder.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if forwarder.stopped_by == signal.SIGTERM:  # terminated by it, once all is closed
        inv.out.flush()
        signal.raise_signal(signal.SIGTERM)


COMMAND = Command(
    name="port-forward",
    summary="Forward one or more local ports to a pod",
    usage="port-forward TYPE/NAME [options] [LOCAL_PORT:]REMOTE_PORT [...[LOCAL_PORT_N:]"
          "REMOTE_PORT_N]",
    run=run,
    flags=[
        Flag("address", STRINGS, default=["localhost"],
             help="Addresses to listen on (comma separated). Only accepts IP addresses or "
                  "localhost as a value. When localhost is supplied, kubectl will try to bind "
                  "on both 127.0.0.1 and ::1 and will fail if neither of these addresses are "
                  "available to bind."),
        Flag("pod-running-timeout", default="1m0s",
             help="The length of time (like 5s, 2m, or 3h, higher than zero) to wait until at "
                  "least one pod is running"),
    ],
    examples="""  # Listen on ports 5000 and 6000 locally, forwarding to the same ports in the pod
  mkctl port-forward pod/mypod 5000 6000

  # Listen on port 8888 locally, forwarding to 5000 in the pod
  mkctl port-forward pod/mypod 8888:5000

  # Listen on a random port locally, forwarding to 5000 in the pod
  mkctl port-forward pod/mypod :5000""",
)
