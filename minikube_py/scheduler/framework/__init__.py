"""The scheduling framework: extension points (interface.py), the data they work on
(types.py), what plugins may use (handle.py), and the runtime that calls them."""
