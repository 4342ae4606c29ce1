"""The gateway controller: Ingress and Gateway API served by one nginx data plane
(`python -m minikube_py.gateway`). Files in reading order:

    controller.py   informers, the sync loop, the Secret, Deployment and Services of the
                    data plane, the statuses (ingress-nginx's controller, a Gateway API
                    implementation's reconciler)
    ingress.py      Ingresses -> ports 80/443 and their status
    gatewayapi.py   GatewayClass, Gateway, HTTPRoute, ReferenceGrant -> ports and the
                    conditions the spec defines
    nginx.py        ports -> nginx.conf (maps, servers, internal locations)
    __main__.py     the command line
"""
