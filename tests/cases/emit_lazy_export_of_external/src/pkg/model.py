from torch import nn


def upload(x, remote=False):
    if remote:
        from pkg import Client, Error as SendError

        try:
            return Client().send(x)
        except SendError:
            return x
    return x


class Net(nn.Module):
    def forward(self, x):
        return upload(x)
