import functools

DEFAULT_SCALE = 2.0


def scaled(factor=DEFAULT_SCALE):
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            return fn(*args, **kwargs) * factor

        return inner

    return wrap


def describe(text, *, tag="block"):
    def wrap(cls):
        cls.description = f"{tag}: {text}"
        return cls

    return wrap
