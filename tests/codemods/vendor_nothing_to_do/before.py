import torch
from timm.layers import trunc_normal_

trunc_normal_(torch.empty(3))
