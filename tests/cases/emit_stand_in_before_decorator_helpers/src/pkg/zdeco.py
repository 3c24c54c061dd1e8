"""A decorator whose work happens in helpers it calls (not read by the decorated class)."""


def documented(obj=None, *, note="documented"):
    def decorate(target):
        if len(target.__qualname__.split(".")) > 1:
            return method_doc(target, note)
        return class_doc(target, note)

    if obj is not None:
        return decorate(obj)
    return decorate


def method_doc(target, note):
    return target


def class_doc(target, note):
    target.__doc__ = f"{target.__doc__ or ''} ({note})"
    return target
