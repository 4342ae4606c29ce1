"""`python -m minikube_py.cluster up|down|status` (the same as the `minikube-py` command)."""

from minikube_py.cluster.cli import main

main()
