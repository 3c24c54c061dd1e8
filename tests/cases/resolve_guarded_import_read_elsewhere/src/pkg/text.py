class Tokenizer:
    def split(self, text):
        return text.split()


def count(words):
    return len(words)
