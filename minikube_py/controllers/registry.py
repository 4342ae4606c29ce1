"""Every controller the controller-manager knows, in the order they start."""

from __future__ import annotations

from minikube_py.controllers.base import Controller

ALL_CONTROLLERS: tuple[type[Controller], ...] = ()
