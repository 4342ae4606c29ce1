"""crictl, the CRI command line (upstream kubernetes-sigs/cri-tools, cmd/crictl): ask a
node's container runtime directly what it runs, as `kubectl` asks the API server. It
speaks CRI v1 with the shared client (minikube_py/cri.py), so it shows what the kubelet
sees. Read in this order:

    cli.py              the global flags and the commands (main.go)
    crictl_config.py    which endpoint: flags, env, /etc/crictl.yaml; connecting
                        (crictl_config.go, pkg/common/config.go, file.go)
    errors.py           the one error root, logrus-shaped lines on stderr
    display.py          tables, truncated ids, "x seconds ago", sizes, json|yaml
                        (display.go, util.go)
    container.py        ps, inspect (container.go), and the flags and filters the
                        pods commands share
    sandbox.py          pods, inspectp (sandbox.go)
    image.py            images, inspecti (image.go)
    info.py             info, version (info.go, version.go)
    logs.py             logs, reading the CRI log file (logs.go; the reading itself is
                        minikube_py/cri_logs.py, cri-client's logs)
    execute.py          exec: ExecSync, or Exec and its streaming URL (exec.go; the
                        stream protocol is minikube_py/streaming/remotecommand.py)
    __main__.py         `python -m minikube_py.crictl`

Installed as the `crictl` console script (pyproject.toml).
"""
