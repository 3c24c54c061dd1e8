"""Hub machinery: a package the block never needs (the original guards it, too)."""

import missing_hub_package


def upload(path):
    return missing_hub_package.push(path)


def download(name):
    return missing_hub_package.fetch(name)
