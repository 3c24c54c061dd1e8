from .misc import SequenceToPair  # noqa: F401
