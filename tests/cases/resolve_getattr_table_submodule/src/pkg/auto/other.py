UNRELATED = {"small": 0}
