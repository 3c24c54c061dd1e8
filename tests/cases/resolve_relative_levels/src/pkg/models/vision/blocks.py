from torch import nn


class Stem(nn.Conv2d):
    pass
