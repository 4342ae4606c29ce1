"""NetworkPolicy enforcement on one node, run by the proxy beside its Service rules
(docs/decisions.md says why in the proxy). Read in this order:

    policies.py    which pods a policy isolates and what each rule allows (upstream's
                   networking/v1 types.go semantics), without a kernel
    nftrules.py    those answers as the node's nftables table inet kube-network-policies
    controller.py  the informers and the sync loop that keep the table current
"""
