"""The garbage collector's dependency graph, kept current from informers (upstream
pkg/controller/garbagecollector/graph.go and graph_builder.go).

    informer events (every deletable resource) --> GraphBuilder.process_graph_change
        add/update: insert the node or update its owners; an owner not seen yet gets a
                    *virtual* node, queued to attempt_to_delete so that a live GET can
                    confirm whether it exists
        delete:     remove the node; its dependents go to attempt_to_delete (their owner
                    may be gone), owners waiting for their dependents are queued again
        deletion starts with the `orphan` finalizer      --> attempt_to_orphan(owner)
        deletion starts with `foregroundDeletion`        --> attempt_to_delete(dependents
                                                              and the owner itself)

Nodes are keyed by uid: an ownerReference names its owner by uid, so an owner deleted and
recreated under the same name is a different node. All changes run in the event loop
without awaiting, so the graph has one writer at a time, as upstream's single
processGraphChanges goroutine guarantees.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from minikube_py.api import Obj
from minikube_py.api.resources import Resource
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import EventHandler

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
ABSENT_OWNER_CACHE_SIZE = 500


@dataclass(frozen=True, order=True)
class ObjectReference:
    """objectReference: an owner reference's coordinates plus the namespace.

    Field order is the sort order upstream's referenceLessThan uses.
    """

    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return (f"[{self.api_version}/{self.kind}, namespace: {self.namespace}, "
                f"name: {self.name}, uid: {self.uid}]")

    def matches(self, reference: Obj) -> bool:
        """ownerReferenceMatchesCoordinates: same uid, name, kind and apiVersion."""
        return (reference.get("uid") == self.uid and reference.get("name") == self.name
                and reference.get("kind") == self.kind
                and reference.get("apiVersion") == self.api_version)


def owner_identity(reference: Obj, namespace: str) -> ObjectReference:
    """The identity an ownerReference points at, read in the dependent's namespace."""
    return ObjectReference(kind=reference.get("kind", ""),
                           api_version=reference.get("apiVersion", ""),
                           namespace=namespace, name=reference.get("name", ""),
                           uid=reference.get("uid", ""))


def blocks_owner_deletion(reference: Obj) -> bool:
    return reference.get("blockOwnerDeletion") is True


def being_deleted(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def has_finalizer(obj: Obj, finalizer: str) -> bool:
    return finalizer in ((obj.get("metadata") or {}).get("finalizers") or [])


def deletion_starts_with_finalizer(old: Obj | None, new: Obj, finalizer: str) -> bool:
    """deletionStartsWithFinalizer: `new` is being deleted with `finalizer`, `old` was not."""
    if not being_deleted(new) or not has_finalizer(new, finalizer):
        return False
    return old is None or not being_deleted(old) or not has_finalizer(old, finalizer)


@dataclass(eq=False)
class Node:
    """One object in the graph: who it is, whom it belongs to, and who belongs to it."""

    identity: ObjectReference
    owners: list[Obj] = field(default_factory=list)
    dependents: set[Node] = field(default_factory=set)
    being_deleted: bool = False
    # Deleted in the foreground: it waits for its blocking dependents to go first.
    deleting_dependents: bool = False
    # Known only from a dependent's ownerReference, not yet seen through an informer.
    virtual: bool = False

    def blocking_dependents(self) -> list[Node]:
        """Dependents whose reference to this node has blockOwnerDeletion: true."""
        return [dependent for dependent in self.dependents
                if any(owner.get("uid") == self.identity.uid and blocks_owner_deletion(owner)
                       for owner in dependent.owners)]

    def partition_dependents(self, owner: ObjectReference) -> tuple[list[Node], list[Node]]:
        """partitionDependents: dependents whose reference matches `owner`, and those
        that name the same uid with other coordinates (or from another namespace)."""
        matching: list[Node] = []
        mismatching: list[Node] = []
        for dependent in self.dependents:
            found_match = found_mismatch = False
            if owner.namespace and owner.namespace != dependent.identity.namespace:
                found_mismatch = True
            else:
                for reference in dependent.owners:
                    if reference.get("uid") == owner.uid:
                        if owner.matches(reference):
                            found_match = True
                        else:
                            found_mismatch = True
            if found_match:
                matching.append(dependent)
            if found_mismatch:
                mismatching.append(dependent)
        return matching, mismatching


@dataclass
class GraphChange:
    """One event for the graph: from an informer, or virtual (a GET found nothing)."""

    type: str  # "add", "update" or "delete"
    obj: Obj
    api_version: str
    kind: str
    old: Obj | None = None
    virtual: bool = False

    @property
    def identity(self) -> ObjectReference:
        """identityFromEvent: the resource's kind and version, the object's coordinates."""
        metadata = self.obj.get("metadata") or {}
        return ObjectReference(kind=self.kind, api_version=self.api_version,
                               namespace=metadata.get("namespace", ""),
                               name=metadata.get("name", ""), uid=metadata.get("uid", ""))


class ReferenceCache:
    """An LRU set of owners confirmed absent, so their dependents skip the GET."""

    def __init__(self, size: int = ABSENT_OWNER_CACHE_SIZE) -> None:
        self.size = size
        self._items: OrderedDict[ObjectReference, None] = OrderedDict()

    def add(self, reference: ObjectReference) -> None:
        self._items[reference] = None
        self._items.move_to_end(reference)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __contains__(self, reference: object) -> bool:
        return reference in self._items


def references_diffs(old: list[Obj], new: list[Obj]
                     ) -> tuple[list[Obj], list[Obj], list[tuple[Obj, Obj]]]:
    """referencesDiffs: owner references added, removed, and changed (old, new) by uid."""
    old_by_uid = {reference.get("uid"): reference for reference in old}
    added: list[Obj] = []
    changed: list[tuple[Obj, Obj]] = []
    for reference in new:
        previous = old_by_uid.pop(reference.get("uid"), None)
        if previous is None:
            added.append(reference)
        elif previous != reference:
            changed.append((previous, reference))
    return added, list(old_by_uid.values()), changed


def alternate_owner_identity(dependents: Iterable[Node], absent: ObjectReference
                             ) -> ObjectReference | None:
    """getAlternateOwnerIdentity: another identity dependents use for the absent uid.

    The first one sorting after `absent`, else the first one: retried identities then
    cycle through every alternative instead of bouncing between two.
    """
    cluster_scoped = not absent.namespace
    alternates: set[ObjectReference] = set()
    for dependent in dependents:
        for reference in dependent.owners:
            if reference.get("uid") != absent.uid:
                continue
            if absent.matches(reference) and (
                    cluster_scoped or absent.namespace == dependent.identity.namespace):
                continue
            candidate = owner_identity(reference, dependent.identity.namespace)
            if cluster_scoped and (candidate.api_version, candidate.kind) == (
                    absent.api_version, absent.kind):
                candidate = replace(candidate, namespace="")
            if candidate != absent:
                alternates.add(candidate)
    if not alternates:
        return None
    following = [candidate for candidate in alternates if candidate > absent]
    return min(following) if following else min(alternates)


class GraphBuilder:
    """Builds the owner -> dependents graph and tells the collector what to look at."""

    def __init__(self, attempt_to_delete: Callable[[Node], None],
                 attempt_to_orphan: Callable[[Node], None], recorder: EventRecorder) -> None:
        self.attempt_to_delete = attempt_to_delete
        self.attempt_to_orphan = attempt_to_orphan
        self.recorder = recorder
        self.uid_to_node: dict[str, Node] = {}
        self.absent_owner_cache = ReferenceCache()

    def event_handler(self, resource: Resource) -> EventHandler:
        """The informer handlers of one monitored resource: every event is a graph change."""

        def change(kind: str, obj: Obj, old: Obj | None = None) -> None:
            self.process_graph_change(GraphChange(kind, obj, resource.api_version,
                                                  resource.kind, old=old))

        return EventHandler(on_add=lambda obj: change("add", obj),
                            on_update=lambda old, new: change("update", new, old),
                            on_delete=lambda obj: change("delete", obj))

    def enqueue_virtual_delete_event(self, identity: ObjectReference) -> None:
        """A live GET found no object (or another uid) for `identity`: act as if deleted."""
        obj = {"apiVersion": identity.api_version, "kind": identity.kind,
               "metadata": {"name": identity.name, "namespace": identity.namespace,
                            "uid": identity.uid}}
        self.process_graph_change(GraphChange("delete", obj, identity.api_version,
                                              identity.kind, virtual=True))

    # -- processGraphChanges ---------------------------------------------------------------

    def process_graph_change(self, change: GraphChange) -> None:
        """processGraphChanges: apply one event to the graph, queue what it affects."""
        uid = (change.obj.get("metadata") or {}).get("uid", "")
        if not uid:
            return
        existing = self.uid_to_node.get(uid)
        if existing is not None and not change.virtual and existing.virtual:
            self._mark_observed(existing, change.identity)
        if change.type in ("add", "update") and existing is None:
            node = Node(identity=change.identity,
                        owners=list(change.obj["metadata"].get("ownerReferences") or []),
                        being_deleted=being_deleted(change.obj),
                        deleting_dependents=being_deleted(change.obj)
                        and has_finalizer(change.obj, FOREGROUND_FINALIZER))
            self.insert_node(node)
            self.process_transitions(change.old, change.obj, node)
        elif change.type in ("add", "update"):
            assert existing is not None
            self._update_node(existing, change)
        elif existing is not None:
            self._delete_node(existing, change)

    def _mark_observed(self, node: Node, observed: ObjectReference) -> None:
        """A virtual node was seen for real: dependents naming it otherwise are checked."""
        if observed != node.identity:
            _, mismatching = node.partition_dependents(observed)
            for dependent in mismatching:
                if observed.namespace and dependent.identity.namespace != observed.namespace:
                    self.report_invalid_namespace_owner_ref(dependent, observed.uid)
                self.attempt_to_delete(dependent)
            node.identity = observed
        node.virtual = False

    def _update_node(self, node: Node, change: GraphChange) -> None:
        owners = list(change.obj["metadata"].get("ownerReferences") or [])
        added, removed, changed = references_diffs(node.owners, owners)
        if added or removed or changed:
            self.add_unblocked_owners_to_delete_queue(removed, changed)
            node.owners = owners
            self.add_dependent_to_owners(node, added)
            self.remove_dependent_from_owners(node, removed)
        if being_deleted(change.obj):
            node.being_deleted = True
        self.process_transitions(change.old, change.obj, node)

    def _delete_node(self, node: Node, change: GraphChange) -> None:
        deleted = change.identity
        remove = True
        if change.virtual and node.virtual:
            # Coordinates of a virtual node are a guess: keep it while some dependents
            # name the uid differently, and try their identity next.
            matching, mismatching = node.partition_dependents(deleted)
            if mismatching:
                remove = False
                if matching:
                    self.absent_owner_cache.add(deleted)
                    for dependent in matching:
                        self.attempt_to_delete(dependent)
                if node.identity == deleted:
                    alternate = alternate_owner_identity(mismatching, deleted)
                    if alternate is not None:
                        node.identity = alternate
                        self.attempt_to_delete(node)
        elif change.virtual and node.identity != deleted:
            # An observed object is not removed because a GET by other coordinates
            # found nothing; only the dependents using those coordinates are checked.
            remove = False
            matching, _ = node.partition_dependents(deleted)
            if matching:
                self.absent_owner_cache.add(deleted)
                for dependent in matching:
                    self.attempt_to_delete(dependent)
        if not remove:
            return
        self.remove_node(node)
        if node.dependents:
            self.absent_owner_cache.add(deleted)
        for dependent in node.dependents:
            self.attempt_to_delete(dependent)
        for reference in node.owners:
            owner = self.uid_to_node.get(reference.get("uid", ""))
            if owner is not None and owner.deleting_dependents:
                self.attempt_to_delete(owner)

    # -- graph edits -----------------------------------------------------------------------

    def insert_node(self, node: Node) -> None:
        self.uid_to_node[node.identity.uid] = node
        self.add_dependent_to_owners(node, node.owners)

    def remove_node(self, node: Node) -> None:
        self.uid_to_node.pop(node.identity.uid, None)
        self.remove_dependent_from_owners(node, node.owners)

    def add_dependent_to_owners(self, node: Node, owners: list[Obj]) -> None:
        """addDependentToOwners: link to each owner, creating virtual owners as needed.

        A dependent whose reference cannot be right (another namespace, other
        coordinates for the owner's uid) is queued so the collector verifies it.
        """
        potentially_invalid = False
        for reference in owners:
            uid = reference.get("uid", "")
            owner = self.uid_to_node.get(uid)
            if owner is None:
                owner = Node(identity=owner_identity(reference, node.identity.namespace),
                             virtual=True)
                self.uid_to_node[uid] = owner
                owner.dependents.add(node)
                self.attempt_to_delete(owner)
                continue
            owner.dependents.add(node)
            if potentially_invalid:
                continue
            owner_namespaced = bool(owner.identity.namespace)
            if owner_namespaced and owner.identity.namespace != node.identity.namespace:
                if not owner.virtual:
                    self.report_invalid_namespace_owner_ref(node, uid)
                potentially_invalid = True
            elif not owner.identity.matches(reference):
                potentially_invalid = True
            elif (not owner_namespaced and owner.identity.namespace != node.identity.namespace
                  and owner.virtual):
                potentially_invalid = True
        if potentially_invalid:
            self.attempt_to_delete(node)

    def remove_dependent_from_owners(self, node: Node, owners: list[Obj]) -> None:
        for reference in owners:
            owner = self.uid_to_node.get(reference.get("uid", ""))
            if owner is not None:
                owner.dependents.discard(node)

    def add_unblocked_owners_to_delete_queue(self, removed: list[Obj],
                                             changed: list[tuple[Obj, Obj]]) -> None:
        """An owner waiting in the foreground may go once a blocking reference is gone."""
        unblocked = [reference for reference in removed if blocks_owner_deletion(reference)]
        unblocked += [new for old, new in changed
                      if blocks_owner_deletion(old) and not blocks_owner_deletion(new)]
        for reference in unblocked:
            owner = self.uid_to_node.get(reference.get("uid", ""))
            if owner is not None:
                self.attempt_to_delete(owner)

    def process_transitions(self, old: Obj | None, new: Obj, node: Node) -> None:
        """processTransitions: a deletion that just started asks for orphaning or for
        deleting the dependents first (foreground)."""
        if deletion_starts_with_finalizer(old, new, ORPHAN_FINALIZER):
            self.attempt_to_orphan(node)
            return
        if deletion_starts_with_finalizer(old, new, FOREGROUND_FINALIZER):
            node.deleting_dependents = True
            for dependent in node.dependents:
                self.attempt_to_delete(dependent)
            self.attempt_to_delete(node)

    def report_invalid_namespace_owner_ref(self, node: Node, owner_uid: str) -> None:
        """A Warning Event: the dependent names an owner that lives in another namespace."""
        reference = next((owner for owner in node.owners if owner.get("uid") == owner_uid),
                         None)
        if reference is None:
            return
        invalid = owner_identity(reference, node.identity.namespace)
        dependent = {"apiVersion": node.identity.api_version, "kind": node.identity.kind,
                     "metadata": {"name": node.identity.name, "uid": node.identity.uid,
                                  "namespace": node.identity.namespace}}
        self.recorder.event(dependent, "Warning", "OwnerRefInvalidNamespace",
                            f'ownerRef {invalid} does not exist in namespace '
                            f'"{node.identity.namespace}"')
