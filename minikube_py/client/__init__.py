"""The client-go equivalent every component uses: REST client, kubeconfig, informers,
workqueue, leader election, the event recorder, retries while the API server is away
(retry.py) and klog's log lines (logs.py). Each is one small module."""
