from .impl import Mlp
