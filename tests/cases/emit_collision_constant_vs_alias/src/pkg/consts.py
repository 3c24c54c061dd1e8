F = 16  # feature count


def features():
    return F * 2
