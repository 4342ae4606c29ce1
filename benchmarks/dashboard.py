"""Benchmark: the dashboard's first paint, its idle cost, and one watch for many tabs.

Run from the repository root as `.venv/bin/python benchmarks/dashboard.py` (options:
--quick, --no-append). It starts a private etcd (on /dev/shm), an API server and the
dashboard (`python -m minikube_py.dashboard`), then:

    1. 100 hollow Node objects and 1,000 pods bound to them (quick: 5 and 50)
    2. the page in Debian's headless chromium: first paint of the cluster view, from
       navigation start to the frame after every pod's element is drawn (target <= 1 s)
    3. the dashboard idle with the tab open, 10 s (quick: 1 s): its CPU (target <= 2% of
       a core) and its RSS (target <= 100 MB)
    4. 10 pods' status changed one after another (quick: 3): from the PATCH sent to the
       frame that drew the pod's new phase (target p50 <= 500 ms; the page's clock and
       ours are the same machine's)
    5. two more tabs: the API server's open WATCH requests on pods stay one (the tabs
       share the dashboard's informers)

Appends its table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import (  # noqa: E402
    BenchmarkError,
    ConnectionPool,
    child_pid,
    cpu_seconds,
    create_all,
    create_namespace,
    private_api_server,
    progress,
)
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.cluster.components import DashboardProcess  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
LOAD_TIMEOUT = 120  # s: bounds a failure only


def node(index: int) -> dict[str, Any]:
    allocatable = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"hollow-{index:03d}"},
            "status": {"capacity": allocatable, "allocatable": allocatable,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(index: int, nodes: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web-{index:05d}"},
            "spec": {"nodeName": f"hollow-{index % nodes:03d}",
                     "containers": [{"name": "c", "image": "localhost/echo:1"}]}}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise BenchmarkError(f"no VmRSS for pid {pid}")


def watches_on_pods(api_url: str) -> float:
    """The API server's open WATCH requests on pods (apiserver_longrunning_requests)."""
    with urllib.request.urlopen(f"{api_url}/metrics", timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if (line.startswith("apiserver_longrunning_requests{")
                    and 'verb="WATCH"' in line and 'resource="pods"' in line):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # the dashboard's serving certificate is its own self-signed one, as upstream's
    # --auto-generate-certificates makes (here no client CA: the page is loaded directly)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1400,1000", "--ignore-certificate-errors"):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


def first_paint(driver: Any, url: str, pods: int) -> tuple[float, str]:
    """Seconds from navigation start to the frame after all `pods` were drawn, and where
    they went (the page's modules loaded, the snapshot come, the drawing done)."""
    from selenium.webdriver.support.wait import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, LOAD_TIMEOUT, poll_frequency=0.05).until(
        lambda d: d.execute_script(
            "return document.querySelectorAll('rect.pod').length") >= pods
        and d.execute_script("return document.getElementById('cluster').dataset.painted"),
        message=f"{pods} pods were not drawn")
    loaded, snapshot, drawn, painted = driver.execute_script(
        "const c = document.getElementById('cluster').dataset;"
        "return [performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,"
        " Number(document.body.dataset.snapshotAt), Number(c.drawn), Number(c.painted)]")
    return float(painted) / 1000, (f"page and modules {loaded:.0f} ms, snapshot at "
                                   f"{snapshot:.0f} ms, drawn at {drawn:.0f} ms")


def drawn_at(driver: Any, name: str, phase: str) -> float:
    """When (ms since the epoch) the page drew pod `name` in `phase`."""
    from selenium.webdriver.support.wait import WebDriverWait

    selector = f'rect.pod[data-name="web/{name}"][data-phase="{phase}"]'
    WebDriverWait(driver, LOAD_TIMEOUT, poll_frequency=0.02).until(
        lambda d: d.execute_script(f"return document.querySelector('{selector}') !== null"),
        message=f"{name} was not drawn {phase}")
    return float(driver.execute_script(
        "return performance.timeOrigin + Number(document.getElementById('cluster')"
        ".dataset.drawn)"))


async def update_latencies(pool: ConnectionPool, driver: Any, count: int) -> list[float]:
    """ms from each status PATCH sent to the frame that drew it, one pod at a time."""
    latencies = []
    for index in range(count):
        name = f"web-{index:05d}"
        sent = time.time() * 1000
        await pool.request("PATCH", f"/api/v1/namespaces/web/pods/{name}/status",
                           orjson.dumps({"status": {"phase": "Running"}}), expect=200,
                           content_type="application/merge-patch+json")
        latencies.append(await asyncio.to_thread(drawn_at, driver, name, "Running") - sent)
    return latencies


async def measure(args: argparse.Namespace) -> list[Row]:
    nodes, pods, idle, changes = (5, 50, 1.0, 3) if args.quick else (100, 1000, 10.0, 10)
    rows: list[Row] = []
    extra = ("--log-requests=false", "--disable-admission-plugins=ServiceAccount")
    async with private_api_server(extra) as (tmp, etcd, api, kubeconfig):
        async with ConnectionPool(api.url, 32) as pool, DashboardProcess(
                kubeconfig, tmp / "dashboard.log", start_timeout=120) as dashboard:
            progress(f"{nodes} hollow nodes, {pods} pods bound to them")
            await create_all(pool, "/api/v1/nodes",
                             [orjson.dumps(node(i)) for i in range(nodes)])
            await create_namespace(pool, "web")
            await create_all(pool, "/api/v1/namespaces/web/pods",
                             [orjson.dumps(pod(i, nodes)) for i in range(pods)])
            pid = child_pid("minikube_py.dashboard")
            driver = await asyncio.to_thread(browser)
            try:
                progress("first paint")
                seconds, steps = await asyncio.to_thread(first_paint, driver,
                                                         dashboard.url + "/", pods)
                rows.append((f"first paint of the cluster view, {pods:,} pods on "
                             f"{nodes} hollow nodes", f"{seconds * 1000:,.0f} ms ({steps})",
                             "<= 1 s", verdict(seconds <= 1.0)))
                progress(f"idle for {idle:.0f} s")
                before, started = cpu_seconds(pid), time.monotonic()
                await asyncio.sleep(idle)
                share = (cpu_seconds(pid) - before) / (time.monotonic() - started)
                rows.append(("dashboard CPU, idle with a tab open",
                             f"{share * 100:.2f}% of a core", "<= 2%",
                             verdict(share <= 0.02)))
                rss = rss_mb(pid)
                rows.append((f"dashboard RSS with {pods:,} pods", f"{rss:.0f} MB",
                             "<= 100 MB", verdict(rss <= 100)))
                progress(f"{changes} status changes")
                latencies = sorted(await update_latencies(pool, driver, changes))
                median = statistics.median(latencies)
                rows.append((f"a pod's status PATCH -> drawn, {changes} one at a time",
                             f"p50 {median:.0f} ms, max {latencies[-1]:.0f} ms",
                             "p50 <= 500 ms", verdict(median <= 500)))
                progress("two more tabs")
                for _ in range(2):
                    await asyncio.to_thread(driver.switch_to.new_window, "tab")
                    await asyncio.to_thread(first_paint, driver, dashboard.url + "/",
                                            pods)
                tabs = await asyncio.to_thread(lambda: len(driver.window_handles))
                watches = await asyncio.to_thread(watches_on_pods, api.url)
                rows.append((f"API server WATCH requests on pods, {tabs} tabs open",
                             f"{watches:.0f}", "1", verdict(watches == 1)))
            finally:
                await asyncio.to_thread(driver.quit)
    return rows


if __name__ == "__main__":
    run_benchmark(__doc__ or "", "dashboard", "dashboard.py", measure)
