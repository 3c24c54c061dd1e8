def aggregation_resolver(query):
    import pkg.aggr as aggr

    if isinstance(query, (list, tuple)):
        return aggr.MultiAggregation([aggregation_resolver(q) for q in query])
    base_cls = aggr.Aggregation
    aggrs = [aggr for aggr in vars(aggr).values() if isinstance(aggr, type)]
    for cls in aggrs:
        if issubclass(cls, base_cls) and cls.__name__.lower() == f"{query}aggregation":
            return cls()
    raise ValueError(query)
