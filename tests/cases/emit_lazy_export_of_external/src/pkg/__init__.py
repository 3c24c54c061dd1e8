import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cloud_sdk_absent import Client, Error

__all__ = ("Client", "Error")


def __getattr__(name):
    """Lazy-import the optional SDK's classes on first access."""
    if name in __all__:
        return getattr(importlib.import_module("cloud_sdk_absent"), name)
    raise AttributeError(f"module {__name__} has no attribute {name}")
