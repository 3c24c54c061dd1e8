try:
    from util import helper
except ImportError:  # an older lib had it; this one (star-exporting .version) does not
    from lib import __version__, helper

SCALE = helper(3)
