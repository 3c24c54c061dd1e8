from vendor.blocks.Mlp import Mlp as Mlp_vendored


class Mlp:
    """The project's own Mlp, not timm's."""


mine = Mlp()
theirs = Mlp_vendored(4)
