from typing import TYPE_CHECKING

from ..utils.lazy import LazyModule

_import_structure = {"mlp": ["Mlp"], "heavy": ["Heavy", "OtherHeavy"]}

if TYPE_CHECKING:
    from .heavy import *
    from .mlp import Mlp
else:
    import sys

    sys.modules[__name__] = LazyModule(__name__, _import_structure)
