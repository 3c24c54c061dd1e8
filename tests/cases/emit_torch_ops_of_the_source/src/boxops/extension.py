import os

import torch


def _load_library(name):
    path = os.path.join(os.path.dirname(__file__), name + ".so")
    try:
        torch.ops.load_library(path)
        return True
    except OSError:
        return False


HAS_OPS = _load_library("_C")
