from dataclasses import dataclass


@dataclass
class Config:
    dim: int = 4
