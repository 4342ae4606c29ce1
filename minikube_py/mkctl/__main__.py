"""`python -m minikube_py.mkctl`: the same as the `mkctl` console script."""

from minikube_py.mkctl.cli import main

main()
