"""The local-path provisioner: PersistentVolumes on the node a claim's pod was scheduled to."""
