"""The Deployment controller, split as upstream splits pkg/controller/deployment:
controller.py (informers and syncDeployment), sync.py (new ReplicaSet, scaling, status),
rolling.py and recreate.py (the two strategies), progress.py (Progressing and the
deadline), rollback.py (the legacy rollback annotation), util.py (pure helpers)."""

from minikube_py.controllers.deployment.controller import DeploymentController

__all__ = ["DeploymentController"]
