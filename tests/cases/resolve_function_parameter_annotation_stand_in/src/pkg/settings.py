"""A config class with heavy machinery; the block only ever hands plain dicts around."""

import json


class Settings(dict):
    def to_dict(self):
        return dict(self)

    @classmethod
    def from_file(cls, path):
        with open(path) as handle:
            return cls(json.load(handle))


class Options:
    """Named by the block's own constructor: whoever builds the block may pass one."""

    def __init__(self, width=4):
        self.width = width


class Source:
    """Named by a method of the block (carried on its own part): callers outside build it."""

    def __init__(self, path):
        self.path = path

    def read(self):
        with open(self.path) as handle:
            return json.load(handle)
