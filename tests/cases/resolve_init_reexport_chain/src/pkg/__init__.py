from .layers import Mlp
