"""Streams into a container: kubectl exec, attach and port-forward, on their way from the
client through the API server and the kubelet to the container runtime."""
