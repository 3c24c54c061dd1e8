from .utils import get_world_size

__all__ = ["get_world_size"]
