TABLE = list(range(1000))
