import torch


def read_weights(path):
    return torch.load(path, map_location="cpu")


class WeightLoader:
    def __init__(self, path):
        self.path = path

    def __call__(self, module):
        module.load_state_dict(read_weights(self.path))
