from lib import settings

_ENABLED = True
settings.register("gate_enabled", __name__, "_ENABLED")


class Scale:
    factor = 2.0


@settings.register("gate_scale", __name__, "Scale.factor")
def _check_scale(value):
    assert value > 0


_UNUSED = 1
settings.register("gate_unused", __name__, "_UNUSED")


def gated(x):
    if settings.get("gate_enabled"):
        return x * settings.get("gate_scale")
    return x
