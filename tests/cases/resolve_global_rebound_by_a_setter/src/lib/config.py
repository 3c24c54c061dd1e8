import os

# Set to True when exporting
_EXPORTABLE = False

if os.environ.get("LIB_FUSED", "1") == "1":
    _FUSED = True
else:
    _FUSED = False


def is_exportable():
    return _EXPORTABLE


class set_exportable:
    """Sets the flag for the duration of a ``with`` block."""

    def __init__(self, mode):
        global _EXPORTABLE
        self.prev = _EXPORTABLE
        _EXPORTABLE = mode

    def __enter__(self):
        pass

    def __exit__(self, *args):
        global _EXPORTABLE
        _EXPORTABLE = self.prev
        return False


def set_fused(enable=True):
    global _FUSED
    _FUSED = enable


def use_fused():
    return _FUSED and not _EXPORTABLE
