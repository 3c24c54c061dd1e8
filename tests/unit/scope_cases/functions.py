"""Function scopes: locals anywhere, global/nonlocal, cells and free variables, lambdas."""

import os.path
import collections as coll

counter = 0


def bump():
    global counter
    counter += 1
    return counter


def late():
    print(value)  # local everywhere in the body (UnboundLocalError at run time)
    value = 1


def nest(a, *args, b=os.sep, **kw):
    c = 1

    def inner(d=c):
        nonlocal c
        c = d
        e = lambda f, g=a: f + g + c + kw.get("x", 0)
        return e

    def reader():
        return a + len(args)

    def declares():
        global a2
        a2 = 1

        def sees():
            return a2

        return sees

    return inner, reader, declares


def deleted():
    import sys
    del sys
    try:
        pass
    except Exception as error:
        print(error)
    with open(os.devnull) as handle, coll.ChainMap() as (k, *rest):
        return handle, k, rest


async def agen(items):
    async for item in items:
        yield item
    async with items as ctx:
        await ctx


def three_levels():
    x = 1

    def middle():
        def inner():
            return x  # free in middle too (passes through)

        return inner

    return middle
