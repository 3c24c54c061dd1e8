import json


def save(path, values):
    with open(path, "w") as handle:
        json.dump(values, handle)
