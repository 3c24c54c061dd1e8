import json


class Sample:
    """A per-sample data object: forward receives a list of them and calls ``to`` on each."""

    def __init__(self, **fields):
        self._fields = dict(fields)

    def to(self, device):
        return Sample(**{k: v.to(device) for k, v in self._fields.items()})

    def dump(self, path):
        with open(path, "w") as handle:
            json.dump(list(self._fields), handle)


class Settings:
    """Only the constructor (and the helper only it calls) receives these."""

    def __init__(self, path):
        with open(path) as handle:
            self.values = json.load(handle)
