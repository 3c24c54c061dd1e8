import importlib.util


def has_fastlib():
    return importlib.util.find_spec("fastlib_absent") is not None
