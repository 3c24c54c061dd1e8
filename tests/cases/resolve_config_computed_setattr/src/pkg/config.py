import copy
import json

from .hub import download


class BaseConfig:
    """Sets its fields by computed names, and reads them back by the keys of its __dict__."""

    def __init__(self, **kwargs):
        self.id2label = {0: "LABEL_0"}
        for key, value in kwargs.items():
            setattr(self, key, value)

    @property
    def num_labels(self):
        return len(self.id2label)

    @num_labels.setter
    def num_labels(self, count):
        self.id2label = {i: f"LABEL_{i}" for i in range(count)}

    def __repr__(self):
        return f"{type(self).__name__} {json.dumps(self.to_diff_dict(), default=str)}"

    def to_dict(self):
        output = copy.deepcopy(self.__dict__)
        output["model_type"] = type(self).__name__
        return output

    def to_diff_dict(self):
        config_dict = self.to_dict()
        default = BaseConfig().to_dict()
        diff = {}
        for key, value in config_dict.items():
            if isinstance(getattr(self, key, None), BaseConfig):
                value = getattr(self, key, None).to_dict()
            if default.get(key) != value:
                diff[key] = value
        return diff

    def update(self, values):
        for key in values:
            if not hasattr(self, key):
                raise KeyError(key)
            setattr(self, key, values[key])

    @classmethod
    def from_pretrained(cls, name):
        return cls(**json.loads(download(name)))

    def save_pretrained(self, path):
        with open(path, "w") as handle:
            json.dump(self.to_dict(), handle)


class WidthConfig(BaseConfig):
    def __init__(self, width=4, **kwargs):
        self.width = width
        super().__init__(**kwargs)
