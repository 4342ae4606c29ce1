"""`python -m minikube_py.crictl`: the same as the `crictl` console script."""

from minikube_py.crictl.cli import main

main()
