"""Cluster DNS: names for Services and their endpoints (CoreDNS's role in a cluster)."""
