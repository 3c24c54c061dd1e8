from ..common import EPS


def safe_div(a, b):
    return a / (b + EPS)
