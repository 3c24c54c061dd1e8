from torch import nn

KNOWN = []


class Registered(nn.Module):
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        KNOWN.append(cls.__name__)
