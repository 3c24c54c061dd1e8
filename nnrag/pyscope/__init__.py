"""Python's scoping rules on ``ast``: bindings, reads and unresolved names."""
