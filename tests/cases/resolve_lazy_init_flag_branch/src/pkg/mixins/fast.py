import fastlib_absent


class FastMixin:
    def fast(self, x):
        return fastlib_absent.run(x)
