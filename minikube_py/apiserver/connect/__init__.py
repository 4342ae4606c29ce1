"""Requests the API server passes on: to a kubelet, a pod, a Service, or another API
server (upstream pkg/registry/core/pod/rest, apimachinery/pkg/util/proxy, kube-aggregator).

    kubeletclient.py     how the API server reaches kubelets (pkg/kubelet/client)
    podlogs.py           pods/log (pkg/registry/core/pod/rest/log.go)
    podconnect.py        pods/exec, attach and portforward (pod/rest/subresources.go)
    streamtranslator.py  kubectl's WebSocket exec spoken to the kubelet as SPDY
                         (apiserver/pkg/util/proxy/streamtranslator.go)
    proxy.py             pods/proxy, services/proxy, nodes/proxy (*/rest/proxy.go)
    aggregation.py       groups another server serves, behind an APIService
                         (kube-aggregator/pkg/apiserver/handler_proxy.go)
    apiservices.py       which APIServices are Available
                         (kube-aggregator/pkg/controllers/status/available_controller.go)
"""
