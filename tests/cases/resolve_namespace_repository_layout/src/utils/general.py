import math


def make_divisible(x, divisor=8):
    return math.ceil(x / divisor) * divisor
