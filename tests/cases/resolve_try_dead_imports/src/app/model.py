from torch import nn

try:
    from heavy.config import Config
    from heavy.layers import helper, removed_in_this_release, Attention as BaseAttention
    from heavy.layers import late
except ImportError:
    Config = None
    BaseAttention = nn.Module
    helper = None
    removed_in_this_release = None
    late = None


class Net(BaseAttention):
    def __init__(self, config: Config = None):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        x = self.proj(x) if helper is None else helper(x)
        return x if late is None else late(x)
