"""The volume controllers of the controller-manager (upstream pkg/controller/volume):
the PersistentVolume binder, the expand controller and the claim and volume protection
controllers."""
