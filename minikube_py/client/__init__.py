"""The client-go equivalent every component uses: REST client, kubeconfig, informers,
workqueue, leader election and the event recorder. Each is one small module."""
