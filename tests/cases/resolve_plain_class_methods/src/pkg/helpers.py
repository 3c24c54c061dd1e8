import abc
import json

from .store import read_file, write_file


class Base(metaclass=abc.ABCMeta):
    """A plain base with abc.ABCMeta: the abstract method the subclass reads on self stays."""

    @abc.abstractmethod
    def get(self, key, default=None):
        raise NotImplementedError

    @abc.abstractmethod
    def flush(self):
        raise NotImplementedError

    def backup(self, path):
        write_file(path, {})


class Settings(Base):
    """A plain helper: only the methods the block can call come with it."""

    kind = "settings"

    def __init__(self, values):
        self.values = dict(values)

    def get(self, key, default=None):
        return self.values.get(key, default)

    def flush(self):
        write_file("settings.json", self.values)

    def scaled(self, key):
        return self._scale(self.get(key))

    def _scale(self, value):
        return value * 2

    @property
    def size(self):
        return len(self.values)

    def save(self, path):
        write_file(path, self.values)

    @classmethod
    def load(cls, path):
        return cls(read_file(path))

    def dumps(self):
        return json.dumps(self.values)

    def __repr__(self):
        return f"Settings({self.values!r})"


class Tuned(Settings):
    """A plain subclass: its override of a method the base calls on self is kept."""

    def _scale(self, value):
        return value * 3

    def export(self, path):
        write_file(path, {"tuned": self.values})


class ShapeMixin:
    """A plain mixin of the block: it keeps what the family reads on self or torch calls."""

    def describe(self):
        return read_file("shape.json")
