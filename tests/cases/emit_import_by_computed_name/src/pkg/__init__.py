"""A lazy package: its API is listed for type checkers only."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models.alpha import AlphaConfig, AlphaModel
    from .models.beta import BetaConfig
