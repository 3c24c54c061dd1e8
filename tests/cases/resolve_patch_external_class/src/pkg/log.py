import functools
import logging


def get_logger(name):
    return logging.getLogger(name)


@functools.lru_cache(None)
def warn_once(self, message):
    self.warning(message)


logging.Logger.warn_once = warn_once


def info_twice(self, message):
    self.info(message)
    self.info(message)


logging.Logger.info_twice = info_twice
