def read_vocab(path):
    with open(path) as file:
        return [line.strip() for line in file]


class Vocab:
    def __init__(self, path):
        self.words = read_vocab(path)
