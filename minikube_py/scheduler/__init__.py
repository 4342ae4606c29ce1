"""The scheduler: a queue of pending pods, a cache of nodes and pods, and a framework
of plugins that filters and scores nodes, then binds each pod to the best one."""
