from torch import nn

from pkg.convert import import_protobuf


class Net(nn.Module):
    def forward(self, x, proto=False):
        if proto:
            return import_protobuf().DESCRIPTOR
        return x
