"""Heavy helpers only the unused methods need."""

import json


def read_file(path):
    with open(path) as handle:
        return json.load(handle)


def write_file(path, values):
    with open(path, "w") as handle:
        json.dump(values, handle)
