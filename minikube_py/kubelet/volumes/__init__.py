"""Volume plugins (one module per upstream plugin) and the kubelet's volume manager."""
