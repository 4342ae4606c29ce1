"""Container images without a registry: build OCI archives locally and load them into nodes."""
