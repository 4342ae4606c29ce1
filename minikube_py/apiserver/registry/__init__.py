"""The registry: what each resource does on create, read, update and delete (upstream
k8s.io/apiserver/pkg/registry and pkg/registry).

    store.py             the generic store: one pipeline for every kind
                         (registry/generic/registry/store.go)
    strategies/          the hooks each kind supplies to it: base.py first, then one
                         module per API group (pkg/registry/<group>/<kind>/strategy.go)
    service_storage.py   Services: the store plus cluster IP and node port allocation
                         (pkg/registry/core/service/storage/storage.go)
    allocators.py        the cluster IP and node port allocators
                         (pkg/registry/core/service/ipallocator, portallocator)
    subresources.py      pods/binding, */scale, namespaces/finalize
                         (pkg/registry/core/pod/storage/storage.go, .../scale)
    eviction.py          pods/eviction (pkg/registry/core/pod/storage/eviction.go)
    reviews.py           access and token reviews, answered and never stored
                         (pkg/registry/authorization/*review)
    event_conversion.py  core/v1 Events <-> events.k8s.io/v1 Events
                         (pkg/apis/events/v1/conversion.go)
    hpa_conversion.py    autoscaling/v1 <-> autoscaling/v2 HorizontalPodAutoscalers
                         (pkg/apis/autoscaling/v1/conversion.go)
"""
