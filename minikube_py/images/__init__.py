"""Container images built on this machine from Debian's packages as OCI archives, and pushed to
the cluster's own registry, from which every node pulls them."""
