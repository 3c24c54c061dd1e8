class AdapterMixin:
    def adapters(self):
        return sorted(getattr(self, "_adapters", {}))
