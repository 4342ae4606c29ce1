"""Server-side apply and field ownership (`metadata.managedFields`).

Upstream splits this between sigs.k8s.io/structured-merge-diff and
k8s.io/apimachinery/pkg/util/managedfields; the modules keep that split:

- `fieldpath.py`: paths and field sets, and their FieldsV1 form,
- `typed.py`: objects read through their schema: the fields a configuration sets,
  merging, comparing, pruning,
- `merge.py`: apply and update with ownership and conflicts (the Updater),
- `managed.py`: the managedFields entries, manager identifiers, conflict messages,
- `fieldmanager.py`: FieldManager, what the API server calls on each write.
"""

from minikube_py.api.managedfields.fieldmanager import FieldManager
from minikube_py.api.managedfields.merge import Conflicts
from minikube_py.api.managedfields.typed import SchemaError

__all__ = ["Conflicts", "FieldManager", "SchemaError"]
