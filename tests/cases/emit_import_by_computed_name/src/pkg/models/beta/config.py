from pkg.heavy import TABLE


class BetaConfig:
    checkpoint = "beta-large"
    sizes = TABLE
