"""Which server, as whom: kubeconfig files and flags, resolved as kubectl resolves them
(client-go's tools/clientcmd).

    files.py    the files: found, decoded, merged (first file wins), written back
    client.py   the chosen context with the flags' overrides -> namespace and RestConfig
"""

from minikube_py.mkctl.kubeconfig.client import (
    ClientConfig,
    Overrides,
    RestConfig,
    parse_timeout,
)
from minikube_py.mkctl.kubeconfig.files import (
    Config,
    KubeconfigError,
    LoadingRules,
    load_file,
    to_v1,
    write_file,
)

__all__ = ["ClientConfig", "Config", "KubeconfigError", "LoadingRules", "Overrides",
           "RestConfig", "load_file", "parse_timeout", "to_v1", "write_file"]
