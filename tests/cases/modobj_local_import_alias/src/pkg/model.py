from torch import nn


class Net(nn.Module):
    def forward(self, x):
        import pkg.sub.ops as m  # a module object, local to the method

        if m.Mode.FAST == "fast":
            return m.scale(x)
        return x
