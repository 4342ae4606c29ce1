"""Resource metrics (metrics-server's role): every node's CPU and memory use, and every
pod's, served as the aggregated API `metrics.k8s.io/v1beta1` that `kubectl top` reads."""
