"""The dashboard, a component: `python -m minikube_py.dashboard` draws the cluster live
and each request's path through the components, in a browser.

    hub.py       one informer per resource, shared by every tab; what the page draws of
                 each object, and each change sent to every tab
    server.py    aiohttp: the page, /api/watch (Server-Sent Events), /api/traces (the
                 trace receiver's answers passed on)
    tls.py       HTTPS only; with a client CA, only the API server's proxy gets in
    static/      the page: plain HTML, ES modules and SVG, no build step
        index.html    the tabs' markup; opens the event stream before anything else loads,
                      and has every module fetched at once (modulepreload)
        app.js        the tabs, the event stream, the state every view reads, links
        cluster.js    nodes, their pods, the pending lane, Services and endpoints
        traces.js     the trace receiver's answers (and its follow stream) for the views
        trace.js      one trace as swimlanes, one lane per component (and node)
        scheduler.js  the scheduler's Filter and Score for a pod, from its span: a
                      column per Score plugin, the plugin that rejected a node
        events.js     the Events, filtered by object
        dom.js        making SVG and HTML elements; an animation per watch event

Users reach it through the API server's service proxy, at upstream's path (the Service
kubernetes-dashboard/kubernetes-dashboard, port https, where `minikube-py dashboard`
deploys it); `minikube-py dashboard` runs a local proxy to it, like `kubectl proxy`.
"""
