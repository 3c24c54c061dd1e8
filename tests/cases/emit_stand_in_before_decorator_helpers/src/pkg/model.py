"""Classes decorated by a helper that runs code of another module at class creation."""

from .zdeco import documented


@documented
class PreBase:
    """A base every model derives from."""

    def forward(self, x):
        return x


@documented
class Other(PreBase):
    """Only tested against by the block: a stand-in."""

    def forward(self, x):
        return -x


class Block(PreBase):
    """The target."""

    def forward(self, x):
        if isinstance(x, Other):
            return None
        return x + 1
