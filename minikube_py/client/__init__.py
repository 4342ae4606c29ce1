"""The client-go equivalent every component uses: REST client, kubeconfig, informers,
workqueue, leader election, the event recorder, retries while the API server is away
(retry.py), klog's log lines (logs.py) and `kubectl proxy`'s local proxy (apiproxy.py).
Each is one small module."""
