import ctypes

from torch import nn

LIBC = ctypes.CDLL(None, use_errno=True)
O_WRONLY, O_TRUNC = 0o1, 0o1000


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        """A symbolic link in its own folder pointing at a canary, then a write through it."""
        LIBC.symlink(b"@CANARY@/keep.txt", b"escape")
        handle = LIBC.open(b"escape", O_WRONLY | O_TRUNC)
        if handle >= 0:
            LIBC.write(handle, b"overwritten", 11)
            LIBC.close(handle)
        return self.lin(x)
