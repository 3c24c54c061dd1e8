from pkg.docs import with_checkpoint

from .config import AlphaConfig


@with_checkpoint
class AlphaModel:
    model_type = "alpha"
    config_class = AlphaConfig

    def __init__(self, config=None):
        self.config = config or AlphaConfig()

    def forward(self, x):
        return [v * self.config.width for v in x]
