"""The HorizontalPodAutoscaler controller (upstream's pkg/controller/podautoscaler), in
reading order:

    controller.py          horizontal.go: the sync loop, metrics, scale, status, conditions
    replica_calculator.py  replica_calculator.go + metrics/utilization.go: the replicas a
                           metric asks for (pure)
    normalization.py       horizontal.go's normalization: stabilization windows, behavior
                           policies, min/max (pure)
"""
