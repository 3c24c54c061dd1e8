from torch import nn

from .log import get_logger

logger = get_logger(__name__)


class Net(nn.Module):
    def forward(self, x):
        logger.warn_once("forward is deprecated")
        return x
