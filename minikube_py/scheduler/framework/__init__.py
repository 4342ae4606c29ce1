"""The scheduling framework: extension points (interface.py), the data they work on
(types.py), the statuses of the nodes Filter turned down (node_to_status.py), what
plugins may use (handle.py), and the runtime that calls them."""
