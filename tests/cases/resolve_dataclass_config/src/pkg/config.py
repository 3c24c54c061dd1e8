from dataclasses import dataclass, field


def default_layers():
    return [8, 8]


@dataclass
class NetConfig:
    dim: int = 8
    layers: list = field(default_factory=default_layers)
