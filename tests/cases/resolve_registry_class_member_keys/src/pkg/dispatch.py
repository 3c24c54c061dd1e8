from enum import Enum

from pkg.constants import BACKEND


class BackendName(str, Enum):
    NATIVE = "native"
    FLASH = "flash"


class _BackendRegistry:
    _backends = {}
    _active = BackendName(BACKEND)

    @classmethod
    def register(cls, backend):
        def decorator(func):
            cls._backends[backend] = func
            return func

        return decorator

    @classmethod
    def active(cls):
        return cls._backends[cls._active]


@_BackendRegistry.register(BackendName.NATIVE)
def _native(q):
    return q * 2


@_BackendRegistry.register(BackendName.FLASH)
def _flash(q):
    from flash_attn import run

    return run(q)


def dispatch(q):
    return _BackendRegistry.active()(q)
