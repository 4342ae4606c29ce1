"""`up` (its default layout, `--layout kubeadm`): kubeadm init's phases, and the cluster's
own objects written as kubeadm writes them:

    init.py          cmd/kubeadm/app/cmd/init.go and phases/init/: run_init, the phases in
                     order, from the images to every node Ready
    staticpod.py     util/staticpod/utils.go: a control-plane static pod, its probes,
                     the manifest written atomically into the kubelet's
                     --pod-manifest-path
    controlplane.py  phases/controlplane/manifests.go and volumes.go, phases/etcd/local.go:
                     etcd, kube-apiserver, kube-controller-manager, kube-scheduler with
                     our processes' flags, kubeadm's paths under /etc/kubernetes and
                     /var/lib/etcd mounted from the node's folders
    ha.py            `up --ha`: the three control-plane nodes' names, and each stacked
                     etcd member's own certificates (kubeadm join --control-plane's
                     etcd phases)
    addons.py        phases/addons/proxy (manifests.go, proxy.go) and phases/addons/dns
                     (manifests.go, dns.go): the kube-proxy DaemonSet and the coredns
                     Deployment behind kube-dns, with their RBAC; our metrics server (as
                     upstream's metrics-server manifest) and trace receiver

Every object is a dict ready to be applied; images come from a component -> reference
dict (minikube_py/images/components.py).
"""
