REGISTERED = []


class Tracked(type):
    def __new__(mcs, name, bases, namespace):
        cls = super().__new__(mcs, name, bases, namespace)
        REGISTERED.append(name)
        return cls


class TrackedMixin(metaclass=Tracked):
    pass
