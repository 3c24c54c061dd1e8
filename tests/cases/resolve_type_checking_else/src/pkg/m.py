from typing import TYPE_CHECKING

from torch import nn

from pkg.util import optional

if TYPE_CHECKING:
    from tqdm import tqdm

    has_tqdm = True
else:
    tqdm, has_tqdm = optional("tqdm")


class Block(nn.Module):
    def forward(self, x):
        if has_tqdm:
            return x
        return -x
