from torch import nn

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}
DEFAULT = "gelu"
