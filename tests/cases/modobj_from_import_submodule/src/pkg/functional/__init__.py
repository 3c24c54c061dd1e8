from ._geometry import pad, resize
from ._color import invert
