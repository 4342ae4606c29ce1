"""The volume controllers of the controller-manager (upstream pkg/controller/volume):
the PersistentVolume binder and the claim and volume protection controllers."""
