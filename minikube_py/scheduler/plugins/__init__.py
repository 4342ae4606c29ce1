"""In-tree plugins, one per file, named after upstream's (NodeResourcesFit, TaintToleration,
...); the registry maps names to classes."""
