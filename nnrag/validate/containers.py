"""Which block files hold other blocks: a block whose file defines a class named like another
block of its source *contains* it. Only a container's run can record that class's harvest
(``nnrag.validate.harvesting``), and a container keeps the verdict of the run that recorded
(``nnrag.validate.stages.prepare_block``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from nnrag.model import BlockRef

CLASS_STATEMENT = re.compile(r"^[ \t]*class[ \t]+([A-Za-z_]\w*)", re.MULTILINE)


def defined_classes(code: str) -> frozenset[str]:
    """The names of the class statements of ``code``, at any depth (more, never fewer: a line
    of a string that reads like one counts too)."""
    return frozenset(CLASS_STATEMENT.findall(code))


def holds_other_blocks(code: str, block: BlockRef, blocks: Iterable[BlockRef]) -> bool:
    """Whether ``block``'s file (``code``) defines a class named like a block of its source
    other than itself (``blocks``: every block, of any source)."""
    names = defined_classes(code)
    return any(
        other.source == block.source and other.name in names and other.id != block.id
        for other in blocks
    )
