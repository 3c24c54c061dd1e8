import ctypes
import os
import signal

from torch import nn

LIBC = ctypes.CDLL(None, use_errno=True)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        """SIGTERM to the server's main thread through libc tgkill (the thread-directed call)."""
        parent = os.getppid()
        LIBC.tgkill(parent, parent, signal.SIGTERM)
        return self.lin(x)
