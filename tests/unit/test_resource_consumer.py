"""The resource consumer's requests (images/resource_consumer.py): upstream's paths,
parameters, answers and errors (test/images/resource-consumer/resource_consumer_handler.go),
and the rule its CPU burner follows."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from minikube_py.images.catalog import ON_DEMAND, RESOURCE_CONSUMER
from minikube_py.images.resource_consumer import (
    Consumer,
    Reply,
    Work,
    behind,
    handler_for,
    route,
)
from tests.api_helpers import until


def post(path: str, **form: str) -> Reply:
    return route("POST", path, {name: [value] for name, value in form.items()}, {})


def test_consume_cpu_answers_upstreams_three_lines_and_starts_the_burn() -> None:
    reply = post("/ConsumeCPU", millicores="250", durationSec="30")
    assert reply == Reply(200, "ConsumeCPU\n250 millicores\n30 durationSec\n",
                          Work("cpu", 250, 30))


def test_consume_mem_holds_megabytes() -> None:
    reply = post("/ConsumeMem", megabytes="100", durationSec="5")
    assert reply == Reply(200, "ConsumeMem\n100 megabytes\n5 durationSec\n",
                          Work("mem", 100, 5))


@pytest.mark.parametrize(("form", "message"), [
    ({"millicores": "250"}, "not given function argument\n"),
    ({"durationSec": "30"}, "not given function argument\n"),
    ({"millicores": "", "durationSec": "30"}, "not given function argument\n"),
    ({"millicores": "0.5", "durationSec": "30"}, "incorrect function argument\n"),
    ({"millicores": "250", "durationSec": "30s"}, "incorrect function argument\n"),
    ({"millicores": " 250", "durationSec": "30"}, "incorrect function argument\n"),
])
def test_missing_or_non_integer_arguments_are_a_bad_request(form: dict[str, str],
                                                            message: str) -> None:
    assert post("/ConsumeCPU", **form) == Reply(400, message)


def test_only_post_is_served_but_metrics_answer_any_method() -> None:
    assert route("GET", "/ConsumeCPU", {"millicores": ["1"], "durationSec": ["1"]}, {}) == (
        Reply(400, "Bad request. Not a POST request\n"))
    assert route("GET", "/Metrics", {}, {"qps": 1.5}) == Reply(
        200, "# HELP qps info message.\n# TYPE qps gauge\nqps 1.500000\n")


def test_an_unknown_path_is_not_found_and_status_is_not_implemented() -> None:
    assert post("/consume-cpu") == Reply(404, "unknown function: /consume-cpu\n")
    assert post("/GetCurrentStatus") == Reply(200, "Warning: not implemented!\nGetCurrentStatus")


def test_bump_metric_takes_a_float_delta() -> None:
    assert post("/BumpMetric", metric="qps", delta="2", durationSec="10") == Reply(
        200, "BumpMetric\nqps metric\n2 delta\n10 durationSec\n", Work("metric", 2.0, 10, "qps"))
    assert post("/BumpMetric", metric="qps", delta="x", durationSec="10").status == 400
    assert post("/BumpMetric", delta="1", durationSec="10").status == 400


def test_the_burner_works_while_behind_its_share_of_the_time_and_sleeps_when_ahead() -> None:
    assert behind(used_cpu=0.2, elapsed=1.0, millicores=250)
    assert not behind(used_cpu=0.25, elapsed=1.0, millicores=250)
    assert not behind(used_cpu=0.0, elapsed=1.0, millicores=0)


def test_the_image_is_built_on_demand_under_upstreams_name() -> None:
    assert RESOURCE_CONSUMER in ON_DEMAND
    assert RESOURCE_CONSUMER.names == (
        "localhost/resource-consumer:1.0",
        "registry.k8s.io/e2e-test-images/resource-consumer:1.13")
    assert RESOURCE_CONSUMER.config.entrypoint == ("/resource-consumer",)


class Durations:
    """A bump's wait, held by the test: each duration asked for, and the release."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.over = threading.Event()

    def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        self.over.wait(30)


@pytest.fixture
def durations() -> Iterator[Durations]:
    held = Durations()
    yield held
    held.over.set()


@pytest.fixture
def server(durations: Durations) -> Iterator[tuple[str, Consumer]]:
    consumer = Consumer([], sleep=durations.sleep)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(consumer))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", consumer
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_form_body_as_curl_data_sends_it_bumps_the_metric_for_its_duration(
        server: tuple[str, Consumer], durations: Durations) -> None:
    url, consumer = server
    request = urllib.request.Request(f"{url}/BumpMetric", data=b"metric=qps&delta=1.5",
                                     method="POST")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(request, timeout=5)
    assert missing.value.code == 400
    request = urllib.request.Request(f"{url}/BumpMetric?durationSec=1",
                                     data=b"metric=qps&delta=1.5", method="POST")
    with urllib.request.urlopen(request, timeout=5) as answer:
        assert answer.read() == b"BumpMetric\nqps metric\n1.5 delta\n1 durationSec\n"
    # the bump holds for its duration (the test's clock: it ends when the test says)
    until(lambda: durations.asked == [1], "the bump to wait out its second")
    with urllib.request.urlopen(f"{url}/Metrics", timeout=5) as answer:
        assert b"qps 1.500000\n" in answer.read()
    durations.over.set()
    until(lambda: consumer.metrics.get("qps") == 0.0, "the bump to be taken back", 10)
