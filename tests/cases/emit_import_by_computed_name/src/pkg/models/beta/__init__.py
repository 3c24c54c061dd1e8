from .config import BetaConfig
