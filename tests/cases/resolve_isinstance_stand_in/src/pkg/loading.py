"""Heavy machinery only the wrapper needs."""

import json


def load_everything(path):
    with open(path) as handle:
        return json.load(handle)
