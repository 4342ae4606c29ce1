"""The cluster autoscaler (upstream's kubernetes/autoscaler cluster-autoscaler): grows a
node group when pods do not fit, shrinks it when nodes idle. Files in reading order:

    __main__.py            `python -m minikube_py.autoscaler`: upstream's flags
    static_autoscaler.py   the loop, RunOnce: scale up, scale down (core/static_autoscaler.go,
                           core/scaleup, core/scaledown)
    simulator.py           the scheduler's Filter plugins on real and template nodes:
                           filter-out-schedulable, the binpacking estimator, utilization,
                           drainability (simulator/, estimator/, utils/drain)
    nodegroup.py           the node group, hollow nodes in this process (the kubemark
                           cloud provider, cloudprovider/kubemark)
    status.py              the cluster-autoscaler-status ConfigMap (clusterstate/api)
"""
