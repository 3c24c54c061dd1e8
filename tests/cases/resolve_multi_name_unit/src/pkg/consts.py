def _pair():
    return 2, 3


HEIGHT, WIDTH = _pair()
DEPTH = 1
