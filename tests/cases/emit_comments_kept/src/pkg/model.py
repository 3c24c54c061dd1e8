# Copyright header of the original file.
from torch import nn

SCALE = 2  # a module constant with a trailing comment


# A leading comment block
# that belongs to the helper.
def helper(x):
    # inside comment
    return (
        x   *   SCALE   # odd spacing is kept
    )


class Net(nn.Module):
    """Docstring kept.

    Second paragraph.
    """

    # class body comment
    def forward(self, x):  # trailing
        return helper(x)
