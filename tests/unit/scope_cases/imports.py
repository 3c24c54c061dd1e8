"""Imports bind in the scope they are written in; star imports only at module level."""

from os.path import *  # noqa: F403
import importlib.util as util
from . import sibling  # noqa: F401  # a relative import (never executed here)


def local_imports():
    import json
    from collections import defaultdict as dd
    from os import path, sep

    def uses():
        return json, dd, path.join("a", sep)

    return uses


class Holder:
    import math

    pi = math.pi

    def method(self):
        return math  # the module's name, not Holder's


try:
    import numpy as np
except ImportError:
    np = None
else:
    arr = np.zeros(1)
finally:
    done = True
