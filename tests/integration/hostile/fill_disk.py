import ctypes

from torch import nn

LIBC = ctypes.CDLL(None, use_errno=True)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        """Many files below the per-file limit, natively: only a limit on the folder stops it."""
        chunk = b"x" * (1 << 20)
        written = 0
        for index in range(4096):
            fd = LIBC.open(f"part{index}.bin".encode(), 0o101, 0o644)
            if fd < 0:
                break
            for _ in range(16):
                count = LIBC.write(fd, chunk, len(chunk))
                if count <= 0:
                    break
                written += count
            LIBC.close(fd)
            if count <= 0:
                break
        raise RuntimeError(f"wrote {written >> 20} MB before the folder was full")
