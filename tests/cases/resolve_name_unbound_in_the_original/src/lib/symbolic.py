import torch

from lib.helpers import *  # an indexed module: it exports no Symbol, no ParameterError


def fit_symbol(values, var=None):
    """Research code: one branch reads a class its module never imports."""
    if var is None:
        return clip(values).sum()
    elif type(var[0]) == Symbol:
        return var
    raise ParameterError(
        f"unexpected {var!r}"
    )
