import functools

import torch
from torch import nn

from .hub import download, upload

HOOKS = []


def restore_state(func):
    """Only wraps: a method it decorates can still be left out."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def on_load(func):
    """Keeps the function in a table: a method it decorates is kept."""
    HOOKS.append(func)
    return func


class HubMixin:
    """A plain mixin of a module base: its methods torch never calls by name."""

    def push_to_hub(self, name):
        return upload(name)

    def state_dict(self, *args, **kwargs):
        """torch.nn.Module defines state_dict: an override in a mixin is kept."""
        return super().state_dict(*args, **kwargs)


class ModelMixin(nn.Module, HubMixin):
    """A module base with framework machinery."""

    config_name = "config.json"

    @classmethod
    @restore_state
    def from_pretrained(cls, name):
        model = cls()
        model.load_state_dict(download(name))
        return model

    @torch.no_grad()
    def save_pretrained(self, path):
        self.push_to_hub(path)

    def scale_inputs(self, x):
        """Called by name from the block: kept, with what it calls on self."""
        return x * self.factor()

    def factor(self):
        return 2.0

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    @on_load
    def freeze(self):
        for parameter in self.parameters():
            parameter.requires_grad_(False)

    def extra_repr(self):
        return f"config={self.config_name}"

    def _load_from_state_dict(self, *args, **kwargs):
        super()._load_from_state_dict(*args, **kwargs)

    @staticmethod
    def checkpoint_name(step):
        return f"step-{step}.pt"


class Decoder(ModelMixin):
    """A module of the closure (not the block): pruned the same way."""

    def __init__(self, width=4):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x)

    def export_onnx(self, path):
        return upload(path)
