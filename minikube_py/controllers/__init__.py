"""The controller-manager: one module per controller, each a `sync(key)` plus its
informer wiring (base.py), run together by manager.py."""
