import os


def get_world_size():
    return int(os.environ.get("WORLD_SIZE", "1"))
