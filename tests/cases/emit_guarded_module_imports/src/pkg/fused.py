import fastlib_absent


def fused(x):
    return fastlib_absent.fused(x)
