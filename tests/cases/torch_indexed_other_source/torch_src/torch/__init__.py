"""A miniature torch, indexed as a source of its own."""

from torch import nn

__version__ = "0.0.mini"
