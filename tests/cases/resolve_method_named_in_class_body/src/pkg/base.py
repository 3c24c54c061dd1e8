from typing import Tuple

import torch
from torch import Tensor, nn

from .typing_utils import ConfigType, SampleList


class BaseHead(nn.Module):
    """``__init__`` has a local variable ``loss``: the method ``loss`` is kept."""

    def __init__(self, losses=(1.0,)):
        super().__init__()
        self.weights = []
        for loss in losses:
            self.weights.append(loss)

    def loss(self, inputs: Tuple[Tensor], samples: SampleList, cfg: ConfigType) -> dict:
        return self.loss_by_feat(self.forward(inputs[0]), samples)

    def loss_by_feat(self, logits: Tensor, samples: SampleList) -> dict:
        return {"loss": logits.sum() * len(samples)}

    def predict(self, inputs: Tuple[Tensor], samples: SampleList) -> Tensor:
        return torch.stack([self.forward(x) for x in inputs])
