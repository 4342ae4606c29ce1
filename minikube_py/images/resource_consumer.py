"""The resource consumer: the program of the image localhost/resource-consumer:1.0, which
the HPA's tests and lab load (upstream's test/images/resource-consumer, the image
registry.k8s.io/e2e-test-images/resource-consumer that test/e2e/framework/autoscaling
drives).

An HTTP server on --port (8080). Each action is a POST, its parameters in the URL's query
or in a form body (`curl --data "millicores=300&durationSec=600" .../ConsumeCPU`):

    POST /ConsumeCPU?millicores=N&durationSec=S       burn N millicores for S seconds
    POST /ConsumeMem?megabytes=N&durationSec=S        hold N megabytes for S seconds
    POST /BumpMetric?metric=M&delta=D&durationSec=S   raise the gauge M by D for S seconds
    POST /GetCurrentStatus                            not implemented (upstream's answer)
    GET or POST /Metrics                              the gauges, Prometheus text

The answer comes at once; the work goes on after it. Each CPU or memory request runs in a
process of its own (`resource-consumer consume-cpu ...`, upstream's consume-cpu binary and
`stress -m 1 --vm-hang 0`), so that requests add up and the server keeps answering: one
request burns at most one CPU. The burner compares the CPU time it has used with the
share of the time since it started that it was asked for: behind, it works for 10 ms;
ahead, it sleeps for 10 ms.

The standard library only: in the image it runs on python3.11 and nothing else.
"""

from __future__ import annotations

import argparse
import logging
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger("resource-consumer")

CONSUME_CPU = "/ConsumeCPU"
CONSUME_MEM = "/ConsumeMem"
BUMP_METRIC = "/BumpMetric"
GET_CURRENT_STATUS = "/GetCurrentStatus"
METRICS = "/Metrics"

BAD_REQUEST = "Bad request. Not a POST request"
UNKNOWN_FUNCTION = "unknown function"
INCORRECT_ARGUMENT = "incorrect function argument"
NOT_GIVEN_ARGUMENT = "not given function argument"

SLICE = 0.01
"""Seconds the burner works, or sleeps, at a time (upstream's 10 ms)."""
MEGABYTE = 1 << 20  # stress's --vm-bytes 100M
PAGE = 4096

GO_INT = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Work:
    """What a request asks to consume: "cpu" (millicores), "mem" (megabytes) or "metric"
    (a delta of the gauge `metric`), for `seconds`."""

    kind: str
    amount: float
    seconds: int
    metric: str = ""


@dataclass(frozen=True)
class Reply:
    """The HTTP answer to a request, and the work it starts (none for an error)."""

    status: int
    body: str
    work: Work | None = None


def go_atoi(text: str) -> int | None:
    """strconv.Atoi: an optionally signed run of decimal digits, nothing around it."""
    return int(text) if GO_INT.fullmatch(text) else None


def go_float(text: str) -> float | None:
    """strconv.ParseFloat(text, 64), for the decimal spellings a delta comes in."""
    if text.strip() != text or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def go_format_float(value: float) -> str:
    """A float64 as fmt.Println prints it: 2 not 2.0, 0.5 as 0.5."""
    shown = repr(value)
    return shown[:-2] if shown.endswith(".0") else shown


def error(status: int, message: str) -> Reply:
    """http.Error: the message and a newline."""
    return Reply(status, message + "\n")


def form_value(form: Mapping[str, Sequence[str]], name: str) -> str:
    """url.Values.Get: the first value of a parameter, or ""."""
    values = form.get(name) or [""]
    return values[0]


def route(method: str, path: str, form: Mapping[str, Sequence[str]],
          metrics: Mapping[str, float]) -> Reply:
    """ServeHTTP: the answer to one request and the work it starts. /Metrics answers any
    method; every other path wants a POST."""
    if path == METRICS:
        return Reply(200, metrics_text(metrics))
    if method != "POST":
        return error(400, BAD_REQUEST)
    if path == CONSUME_CPU:
        return consume(form, "millicores", "cpu", CONSUME_CPU)
    if path == CONSUME_MEM:
        return consume(form, "megabytes", "mem", CONSUME_MEM)
    if path == GET_CURRENT_STATUS:
        return Reply(200, f"Warning: not implemented!\n{GET_CURRENT_STATUS[1:]}")
    if path == BUMP_METRIC:
        return bump_metric(form)
    return error(404, f"{UNKNOWN_FUNCTION}: {path}")


def consume(form: Mapping[str, Sequence[str]], parameter: str, kind: str, address: str
            ) -> Reply:
    """handleConsumeCPU / handleConsumeMem: both parameters given, both integers."""
    amount_text = form_value(form, parameter)
    seconds_text = form_value(form, "durationSec")
    if not amount_text or not seconds_text:
        return error(400, NOT_GIVEN_ARGUMENT)
    amount, seconds = go_atoi(amount_text), go_atoi(seconds_text)
    if amount is None or seconds is None:
        return error(400, INCORRECT_ARGUMENT)
    return Reply(200, f"{address[1:]}\n{amount} {parameter}\n{seconds} durationSec\n",
                 Work(kind, amount, seconds))


def bump_metric(form: Mapping[str, Sequence[str]]) -> Reply:
    """handleBumpMetric: a metric name, a float delta and an integer duration."""
    metric = form_value(form, "metric")
    delta_text = form_value(form, "delta")
    seconds_text = form_value(form, "durationSec")
    if not metric or not delta_text or not seconds_text:
        return error(400, NOT_GIVEN_ARGUMENT)
    delta, seconds = go_float(delta_text), go_atoi(seconds_text)
    if delta is None or seconds is None:
        return error(400, INCORRECT_ARGUMENT)
    return Reply(200, f"{BUMP_METRIC[1:]}\n{metric} metric\n{go_format_float(delta)} delta\n"
                      f"{seconds} durationSec\n", Work("metric", delta, seconds, metric))


def metrics_text(metrics: Mapping[str, float]) -> str:
    """handleMetrics: each gauge in Prometheus' text format."""
    return "".join(f"# HELP {name} info message.\n# TYPE {name} gauge\n{name} {value:f}\n"
                   for name, value in metrics.items())


def behind(used_cpu: float, elapsed: float, millicores: int) -> bool:
    """Whether the burner used less CPU time than `millicores` of the time elapsed (it
    then works a slice, else it sleeps one)."""
    return used_cpu < elapsed * millicores / 1000


# -- the work ---------------------------------------------------------------------------------

def burn_cpu(millicores: int, seconds: int) -> None:
    """consume-cpu: keep this process's CPU use at `millicores` for `seconds`."""
    start, first = time.monotonic(), time.process_time()
    while (elapsed := time.monotonic() - start) < seconds:
        if behind(time.process_time() - first, elapsed, millicores):
            until = time.process_time() + SLICE
            while time.process_time() < until:
                pass
        else:
            time.sleep(SLICE)


def hold_memory(megabytes: int, seconds: int) -> None:
    """consume-mem: allocate `megabytes`, touch every page (an untouched one is not in
    the working set), and keep them for `seconds`."""
    block = bytearray(megabytes * MEGABYTE)
    for offset in range(0, len(block), PAGE):
        block[offset] = 1
    time.sleep(seconds)
    del block


class Consumer:
    """The server's state: the gauges BumpMetric raises, and how work is started."""

    def __init__(self, program: Sequence[str],
                 sleep: Callable[[float], object] = time.sleep) -> None:
        self.program = list(program)  # how to run this file as a child process
        self.metrics: dict[str, float] = {}
        self.lock = threading.Lock()
        self.sleep = sleep  # how a bump waits out its duration

    def start(self, work: Work) -> None:
        """Start what a request asked for, in the background."""
        if work.kind == "metric":
            threading.Thread(target=self.bump, args=(work,), daemon=True).start()
            return
        if work.kind == "cpu":
            log.info("ConsumeCPU millicores: %d, durationSec: %d", work.amount, work.seconds)
            command = ["consume-cpu", f"--millicores={int(work.amount)}"]
        else:
            log.info("ConsumeMem megabytes: %d, durationSec: %d", work.amount, work.seconds)
            command = ["consume-mem", f"--megabytes={int(work.amount)}"]
        command.append(f"--duration-sec={work.seconds}")
        threading.Thread(target=subprocess.run, args=([*self.program, *command],),
                         daemon=True).start()

    def bump(self, work: Work) -> None:
        """bumpMetric: add the delta, wait, take it away again."""
        log.info("BumpMetric metric: %s, delta: %s, durationSec: %d", work.metric,
                 go_format_float(work.amount), work.seconds)
        with self.lock:
            self.metrics[work.metric] = self.metrics.get(work.metric, 0.0) + work.amount
        self.sleep(work.seconds)
        with self.lock:
            self.metrics[work.metric] -= work.amount


def handler_for(consumer: Consumer) -> type[BaseHTTPRequestHandler]:
    """The request handler: parse the form (body values first, as Go's ParseForm puts
    them), route, answer, then start the work."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "resource-consumer"

        def do_GET(self) -> None:
            self.serve()

        def do_POST(self) -> None:
            self.serve()

        def do_PUT(self) -> None:
            self.serve()

        def serve(self) -> None:
            url = urlsplit(self.path)
            form: dict[str, list[str]] = {}
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode(errors="replace") if length else ""
            if self.headers.get_content_type() == "application/x-www-form-urlencoded":
                form = parse_qs(body, keep_blank_values=True)
            for name, values in parse_qs(url.query, keep_blank_values=True).items():
                form.setdefault(name, []).extend(values)
            with consumer.lock:
                reply = route(self.command, url.path, form, dict(consumer.metrics))
            data = reply.body.encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            if reply.work is not None:
                consumer.start(reply.work)

        def log_message(self, format: str, *args: object) -> None:
            """Requests are logged by what they start, not one line each."""

    return Handler


def main(argv: list[str] | None = None) -> None:
    """`resource-consumer [--port 8080]`, or one of its workers: `consume-cpu
    --millicores N --duration-sec S`, `consume-mem --megabytes N --duration-sec S`."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(message)s", datefmt="%Y/%m/%d %H:%M:%S")
    parser = argparse.ArgumentParser(prog="resource-consumer")
    parser.add_argument("-port", "--port", type=int, default=8080)
    workers = parser.add_subparsers(dest="worker")
    cpu = workers.add_parser("consume-cpu")
    cpu.add_argument("--millicores", type=int, default=0)
    cpu.add_argument("--duration-sec", type=int, default=0)
    mem = workers.add_parser("consume-mem")
    mem.add_argument("--megabytes", type=int, default=0)
    mem.add_argument("--duration-sec", type=int, default=0)
    args = parser.parse_args(argv)
    if args.worker == "consume-cpu":
        burn_cpu(args.millicores, args.duration_sec)
        return
    if args.worker == "consume-mem":
        hold_memory(args.megabytes, args.duration_sec)
        return
    # As PID 1 of its container it gets no default SIGTERM action: stop on it.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(0))
    consumer = Consumer([sys.executable, sys.argv[0]])
    server = ThreadingHTTPServer(("", args.port), handler_for(consumer))
    server.daemon_threads = True
    log.info("resource-consumer listening on port %d", args.port)
    server.serve_forever()


if __name__ == "__main__":
    main()
