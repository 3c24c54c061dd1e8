"""Configurations by model type, imported on first use."""

import importlib

NAMES = {"alpha": "AlphaConfig", "beta": "BetaConfig"}


class LazyMapping:
    def __init__(self, mapping):
        self._mapping = mapping
        self._modules = {}

    def __getitem__(self, key):
        value = self._mapping[key]
        if key not in self._modules:
            self._modules[key] = importlib.import_module(f".{key}", "pkg.models")
        if hasattr(self._modules[key], value):
            return getattr(self._modules[key], value)
        return getattr(importlib.import_module("pkg"), value)


CONFIGS = LazyMapping(NAMES)
