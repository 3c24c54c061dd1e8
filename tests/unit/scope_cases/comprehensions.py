"""Comprehensions: own scopes, walrus to the enclosing function or module, nesting."""

data = [1, 2, 3]
total = [y for x in data if (y := x * 2)]
squares = {k: v for k, v in zip(data, data)}
gen = (i for i in range(3) for j in range(i))
nested = [[a * b for b in data] for a in data]


def walrus(items):
    found = [last := item for item in items]
    deep = [[(hit := b) for b in a] for a in items]
    return found, last, deep, hit


def global_walrus(items):
    global marker
    return [marker := i for i in items]


class K:
    values = [1, 2]
    doubled = [v * 2 for v in values]
    pairs = {v: w for v in values for w in range(v)}
