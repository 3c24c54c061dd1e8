def download(name):
    with open(name) as handle:
        return handle.read()
