KIND_TO_TABLE = {
    "width": ("sizes", "WIDTHS"),
}


def lookup(kind, size):
    from . import auto as auto_module

    module_name, table_name = KIND_TO_TABLE[kind]
    return getattr(getattr(auto_module, module_name), table_name)[size]
