"""Class scopes: order in the body, methods that do not see the body, __class__ and super."""

x = 1
y = 2


class A:
    y = x  # the module's x
    x = y  # A's y
    z = [x for _ in range(3)]  # the first iterable sees A, the element does not
    w = [y for _ in range(x)]

    def method(self):
        return x, y, super().method(), __class__

    class Inner:
        v = y  # not A's y: nested class bodies do not see the outer one

    del y
    for i in range(3):
        q = i


def outer():
    a = 1

    class B:
        b = a  # free: class bodies see enclosing functions
        a = 2

        def m(self):
            return a  # outer's a, not B's

    return B


def shadow():
    class C:
        def f(self):
            return C  # free through the class
    return C
