class AlphaConfig:
    """Configuration of alpha models."""

    checkpoint = "alpha-base"

    def __init__(self, width=4):
        self.width = width
