from torch import nn


class Net(nn.Module):
    def forward(self, x):
        import pkg.sub.ops
        import pkg.sub as s

        print(s.ops.Z, pkg.sub.ops.__name__)
        return pkg.sub.ops.f(x)
