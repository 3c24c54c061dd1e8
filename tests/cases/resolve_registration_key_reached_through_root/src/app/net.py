from torch import nn

from det.preprocess import Normalize
from engine.registry import MODELS


class Net(nn.Module):
    """Builds its preprocessor through the root registry, by a scope-qualified key."""

    def __init__(self, preprocessor=dict(type="det.Normalize")):
        super().__init__()
        self.preprocessor = MODELS.build(preprocessor)
        self.fallback = Normalize()

    def forward(self, x):
        return self.preprocessor(x) + self.fallback(x)
