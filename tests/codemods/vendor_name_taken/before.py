import timm.layers as L


class Mlp:
    """The project's own Mlp, not timm's."""


mine = Mlp()
theirs = L.Mlp(4)
