def import_protobuf():
    from pkg import pb

    return pb
