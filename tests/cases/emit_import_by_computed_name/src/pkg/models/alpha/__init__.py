from .config import AlphaConfig
from .model import AlphaModel
