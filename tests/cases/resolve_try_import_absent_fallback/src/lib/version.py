__version__ = "2.2.0"

__all__ = ["__version__"]
