from torch.nn import functional
from torch.nn.modules import *  # noqa: F403
