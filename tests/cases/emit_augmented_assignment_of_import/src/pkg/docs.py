DOC = "Arguments:"
EXTRA = ["a"]
