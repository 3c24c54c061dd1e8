# A package-style re-export of the computed names, kept in a try as a type-checker hint.
try:
    from lib.acts import ReLU, Sigmoid
except ImportError:
    pass
