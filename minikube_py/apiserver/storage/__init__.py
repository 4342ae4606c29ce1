"""Storage: the API server's only road to etcd (upstream k8s.io/apiserver/pkg/storage).

    etcd.py         etcd's KV, Watch and Lease APIs over gRPC, TLS included
                    (storage/etcd3/store.go)
    encryption.py   Secrets encrypted at rest (storage/value/encrypt, --encryption-
                    provider-config)
    watchcache.py   one etcd watch per resource, fanned out to every API watcher
                    (storage/cacher)
    consistent_read.py  whether the watch cache is as fresh as etcd now, so that a
                    consistent list may be served from it (cacher/delegator.go)
"""
