import math

BASE = 16
WIDTHS = tuple(BASE * 2**i for i in range(4))
SCALE = 1 / math.sqrt(BASE)
UNUSED = "never read"
