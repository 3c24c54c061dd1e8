from .blocks import Residual
