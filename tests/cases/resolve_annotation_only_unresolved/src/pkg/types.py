class Cache:
    """Resolvable, so it is inlined for typing.get_type_hints."""
