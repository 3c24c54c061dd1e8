from typing import TYPE_CHECKING

from ..utils import SLOW_IMPORT, LazyModule, is_fast_available

_import_structure = {"adapter": ["AdapterMixin"]}
if is_fast_available():
    _import_structure["fast"] = ["FastMixin"]

if TYPE_CHECKING or SLOW_IMPORT:
    if is_fast_available():
        from .fast import FastMixin

    from .adapter import AdapterMixin
else:
    import sys

    sys.modules[__name__] = LazyModule(__name__, _import_structure)
