"""Unit tests of the scheduler: framework pieces and in-tree plugins, on plain data."""
