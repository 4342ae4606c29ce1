"""The kubelet, the node agent (upstream pkg/kubelet): it turns the pods bound to its
node into containers over CRI and reports how they are. Read in this order:

    __main__.py                 `python -m minikube_py.kubelet`: flags (cmd/kubelet)
    kubelet.py                  the Kubelet: informers, sync loop, sync_pod (kubelet.go)
    config_file.py              static pods from --pod-manifest-path (config/file.go,
                                file_linux.go, common.go)
    mirror_client.py            their mirror pods in the API, and the config.* annotations
                                (pod/mirror_client.go, types/pod_update.go)

    node_status.py, lease.py    the Node object and its heartbeat Lease
                                (kubelet_node_status.go, nodelease/controller.go)
    csinode.py                  the node's CSINode (volume/csi/nodeinfomanager)
    pod_workers.py              one task per pod (pod_workers.go)
    pleg.py                     notice what changed in the runtime (pleg/generic.go)
    kuberuntime.py              GetPodStatus, SyncPod, KillPod over CRI
                                (kuberuntime/kuberuntime_manager.go)
    pod_actions.py              computePodActions (kuberuntime_manager.go)
    kuberuntime_sandbox.py      a sandbox's CRI config (kuberuntime_sandbox.go)
    kuberuntime_container.py    a container's CRI config (kuberuntime_container.go)
    podstate.py                 what the runtime holds for one pod (container/runtime.go)
    envvars.py                  a container's environment (kubelet_pods.go, envvars/)
    resources.py                QoS, CPU shares and quota, memory (kuberuntime_container_linux.go)
    images.py, backoff.py       pulling images and backing off (images/image_manager.go)
    lifecycle.py                postStart and preStop hooks (lifecycle/handlers.go)
    prober.py, probe_workers.py probes and their workers (prober/)
    pod_status.py               generateAPIPodStatus (kubelet_pods.go)
    status_manager.py           writing pod status (status/status_manager.go)
    volumes/                    volume plugins and the volume manager (volume/, volumemanager/)
    objectcache.py              the Secrets and ConfigMaps pods use (util/manager/)
    eviction.py                 hard eviction thresholds (eviction/eviction_manager.go)
    server.py, auth.py          the kubelet's HTTP API and who may use it (server/)
    host_interface.py           what that server asks of the kubelet (server/server.go)
    metrics.py                  /metrics, /metrics/cadvisor, /metrics/resource
    certificate.py              client and serving certificates (certificate/)
    simulated.py, hollow.py     a fake runtime and many kubelets in one process (kubemark)

The CRI client it drives containerd with is the shared minikube_py/cri.py (cri-client),
and the container log files it serves are read by the shared minikube_py/cri_logs.py
(cri-client's logs). containerd's own setup for a node (its config, CNI,
the pause image) is not the kubelet's job: it lives in cluster/runtime_setup.py, used by
the launcher.
"""
