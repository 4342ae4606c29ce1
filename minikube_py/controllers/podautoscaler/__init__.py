"""The HorizontalPodAutoscaler controller (upstream's pkg/controller/podautoscaler).

    replica_calculator.py  replica_calculator.go + metrics/utilization.go: replicas a
                           metric asks for (pure)
"""
