"""API Priority and Fairness (flowcontrol.apiserver.k8s.io), upstream's
apiserver/pkg/util/flowcontrol: which requests the server serves first when it cannot
serve them all at once. In reading order:

    bootstrap.py        the mandatory and suggested FlowSchemas and priority levels
                        (apis/flowcontrol/bootstrap/default.go)
    ensurer.py          the config producer that keeps them in the cluster
                        (registry/flowcontrol/ensurer)
"""
