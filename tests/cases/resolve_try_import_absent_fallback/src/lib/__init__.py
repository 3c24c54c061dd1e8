from .version import *
