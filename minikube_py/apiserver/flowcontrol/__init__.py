"""API Priority and Fairness (flowcontrol.apiserver.k8s.io), upstream's
apiserver/pkg/util/flowcontrol: which requests the server serves first when it cannot
serve them all at once. The filter that uses it is endpoints/filters.py's
with_priority_and_fairness (server/filters/priority-and-fairness.go). In reading order:

    bootstrap.py         the mandatory and suggested FlowSchemas and priority levels
                         (apis/flowcontrol/bootstrap/default.go)
    ensurer.py           the config producer that keeps them in the cluster
                         (registry/flowcontrol/ensurer)
    rule.py              matching a request to a FlowSchema, and its flow (rule.go)
    shufflesharding.py   the Dealer: a flow's hand of queues (util/shufflesharding)
    queueset.py          one level's seats and fair queues (fairqueuing/queueset)
    apf_controller.py    the seat split among levels, one QueueSet each, classification
                         (apf_controller.go)
    borrowing.py         levels lending and borrowing seats by demand (conc_alloc.go)
    dropped_requests.py  the Retry-After of a refused request (dropped_requests_tracker.go)
"""
