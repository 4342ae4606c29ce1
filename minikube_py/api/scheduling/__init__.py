"""Scheduling helpers shared by the scheduler and the DaemonSet controller (component-helpers)."""
