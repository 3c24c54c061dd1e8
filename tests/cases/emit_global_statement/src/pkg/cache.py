_STATE = None


def cached(x):
    global _STATE
    if _STATE is None:
        _STATE = x
    return _STATE
