"""`mkctl autoscale`: create an autoscaling/v2 HorizontalPodAutoscaler for a workload
(kubectl autoscale).

    mkctl autoscale deployment web --min=1 --max=5 --cpu=50%
        horizontalpodautoscaler.autoscaling/web autoscaled

The steps of kubectl's autoscale.go:
1. --max at least 1 and at least --min;
2. the objects (builder.py: TYPE NAME, TYPE/NAME), each read;
3. for each, an HPA named after it (or --name) that targets it, with a Resource metric
   for --cpu / --memory (`70%`: a utilization, `500m`: an average value) and for the
   deprecated --cpu-percent;
4. POST it to autoscaling/v2 (fieldManager kubectl-autoscale), or print it on a dry run.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.quantity import QuantityError, canonical_quantity
from minikube_py.mkctl import builder
from minikube_py.mkctl.changes import DRY_RUN_FLAG, OUTPUT_FLAG, OperationPrinter, dry_run
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import Aggregate, MkctlError, StatusError
from minikube_py.mkctl.flags import INT, Flag

CPU_PERCENT_DEPRECATION = (
    "Flag --cpu-percent has been deprecated, Use --cpu with percentage or resource quantity "
    "format (e.g., '70%' for utilization or '500m' for milliCPU).\n")


def _metric(resource: str, value: str) -> Obj:
    """A Resource metric from `70%` (Utilization) or a quantity (AverageValue)."""
    if value.endswith("%"):
        try:
            percent = int(value[:-1])
        except ValueError:
            percent = -1
        if percent < 0:
            raise MkctlError(f"invalid resource {resource} value: {value}")
        target: Obj = {"type": "Utilization", "averageUtilization": percent}
    else:
        try:
            target = {"type": "AverageValue", "averageValue": canonical_quantity(value)}
        except QuantityError as error:
            raise MkctlError(f"invalid resource {resource} value: {value}") from error
    return {"type": "Resource", "resource": {"name": resource, "target": target}}


def horizontal_pod_autoscaler_for(inv: Invocation, obj: Obj) -> Obj:
    """Step 3: the HPA kubectl builds for one workload."""
    flags = inv.flags
    meta = obj.get("metadata") or {}
    spec: Obj = {"scaleTargetRef": {"kind": obj.get("kind", ""), "name": meta.get("name", ""),
                                    "apiVersion": obj.get("apiVersion", "")}}
    if flags["min"] >= 0:
        spec["minReplicas"] = flags["min"]
    spec["maxReplicas"] = flags["max"]
    metrics: list[Obj] = []
    if flags["cpu-percent"] >= 0:
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": flags["cpu-percent"]}}})
    for resource in ("cpu", "memory"):
        if flags[resource]:
            metrics.append(_metric(resource, flags[resource]))
    if metrics:
        spec["metrics"] = metrics
    return {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
            "metadata": {"name": flags["name"] or meta.get("name", ""),
                         "namespace": meta.get("namespace", "")},
            "spec": spec, "status": {"desiredReplicas": 0, "currentMetrics": None}}


def _create(inv: Invocation, hpa: Obj, namespace: str, params: dict[str, str]) -> Obj:
    """Step 4: POST to autoscaling/v2; when that fails, kubectl falls back to autoscaling/v1
    for an HPA v1 can express (a CPU percentage and nothing else), and says the fallback
    failed ("empty input") for one without a CPU target."""
    body = {key: value for key, value in hpa.items() if key != "status"}
    try:
        return inv.client.request_json(
            "POST", f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers",
            params, body=body)
    except StatusError:
        flags = inv.flags
        if flags["memory"] or (flags["cpu"] and not flags["cpu"].endswith("%")):
            raise
        if not flags["cpu"] and flags["cpu-percent"] < 0:
            raise MkctlError("failed to create autoscaling/v2 HPA and the configuration is "
                             "incompatible with autoscaling/v1: empty input") from None
    spec = body["spec"]
    v1_spec = {key: spec[key] for key in ("scaleTargetRef", "minReplicas", "maxReplicas")
               if key in spec}
    v1_spec["targetCPUUtilizationPercentage"] = (
        spec["metrics"][-1]["resource"]["target"]["averageUtilization"])
    return inv.client.request_json(
        "POST", f"/apis/autoscaling/v1/namespaces/{namespace}/horizontalpodautoscalers",
        params, body={"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1",
                      "metadata": body["metadata"], "spec": v1_spec})


def run(inv: Invocation) -> None:
    flags = inv.flags
    if "cpu-percent" in flags.changed:
        inv.err.write(CPU_PERCENT_DEPRECATION)
    mode = dry_run(inv)
    if flags["max"] < 1:
        raise MkctlError(f"--max=MAXPODS is required and must be at least 1, max: "
                         f"{flags['max']}")
    if flags["max"] < flags["min"]:
        raise MkctlError(f"--max=MAXPODS must be larger or equal to --min=MINPODS, max: "
                         f"{flags['max']}, min: {flags['min']}")
    if not inv.args:
        raise MkctlError("You must provide one or more resources by argument or filename.\n"
                         "Example resource specifications include:\n   '-f rsrc.yaml'\n"
                         "   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'")
    if len(inv.args) == 1 and "/" not in inv.args[0]:
        raise MkctlError("resource(s) were provided, but no name was specified")
    namespace, _ = inv.namespace()
    selection = builder.select(inv, list(inv.args), namespace=namespace, all_namespaces=False,
                               label_selector="", field_selector="")
    results = builder.fetch(inv, selection, accept="", chunk_size=builder.DEFAULT_CHUNK_SIZE)
    errors: list[Exception] = list(results.errors)
    printer = OperationPrinter(inv, "created" if mode == "client" else "autoscaled")
    for _resource, obj in builder.each_object(results):
        try:
            hpa = horizontal_pod_autoscaler_for(inv, obj)
            if mode != "client":
                params = {"fieldManager": "kubectl-autoscale"}
                if mode == "server":
                    params["dryRun"] = "All"
                hpa = _create(inv, hpa, hpa["metadata"]["namespace"] or namespace, params)
        except (StatusError, MkctlError) as error:
            errors.append(error)
            continue
        printer.print_obj(hpa, struct_order=mode == "client")
    if errors:
        raise Aggregate(errors)


COMMAND = Command(
    name="autoscale",
    summary="Auto-scale a deployment, replica set, stateful set, or replication controller",
    usage="autoscale (-f FILENAME | TYPE NAME | TYPE/NAME) [--min=MINPODS] --max=MAXPODS "
          "[--cpu=CPU] [--memory=MEMORY] [options]",
    run=run,
    flags=[
        Flag("cpu", help="Target CPU utilization over all the pods. When specified as a "
                         "percentage (e.g.\"70%\" for 70% of requested CPU) it will target "
                         "average utilization. When specified as quantity (e.g.\"500m\" for "
                         "500 milliCPU) it will target average value."),
        Flag("cpu-percent", INT, default=-1,
             help="The target average CPU utilization (represented as a percent of "
                  "requested CPU) over all the pods. If it's not specified or negative, a "
                  "default autoscaling policy will be used."),
        DRY_RUN_FLAG,
        Flag("max", INT, default=-1,
             help="The upper limit for the number of pods that can be set by the "
                  "autoscaler. Required."),
        Flag("memory", help="Target memory utilization over all the pods. When specified "
                            "as a percentage (e.g.\"60%\" for 60% of requested memory) it will "
                            "target average utilization. When specified as quantity "
                            "(e.g.\"200Mi\" for 200 MiB, \"1Gi\" for 1 GiB) it will target "
                            "average value."),
        Flag("min", INT, default=-1,
             help="The lower limit for the number of pods that can be set by the "
                  "autoscaler. If it's not specified or negative, the server will apply a "
                  "default value."),
        Flag("name", help="The name for the newly created object. If not specified, the "
                          "name of the input resource will be used."),
        OUTPUT_FLAG,
    ],
    examples="""  # Auto scale a deployment "foo", with the number of pods between 2 and 10, no
  # target CPU utilization specified so a default autoscaling policy will be used
  mkctl autoscale deployment foo --min=2 --max=10""",
)
