"""A parsed template set, as Go's template.New(name).Funcs(...).Parse(text) makes it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .execute import State
from .funcs import BUILTINS, GoFunc
from .parser import MAX_PAREN_DEPTH, ParseError, parse
from .values import MISSING


class GoTemplate:
    """Parse once (a ParseError, a ValueError, names the position: `template: NAME:LINE: ...`), then
    `execute(data)` as often as needed (an ExecError names the position and the failing action).

    `data` is the dot: Python values standing for Go's (see `values`): JSON objects and arrays as
    `dict` and `list`, numbers as `float` (float64) unless they are Go ints (`int`)."""

    __slots__ = ("funcs", "name", "trees")

    def __init__(self, text: str, name: str = "template", funcs: Mapping[str, GoFunc] | None = None,
                 left: str = "", right: str = "", max_paren_depth: int = MAX_PAREN_DEPTH):
        self.name = name
        self.funcs = {**BUILTINS, **(funcs or {})}
        try:
            self.trees = parse(name, text, self.funcs, left, right, max_paren_depth)
        except RecursionError:
            raise ParseError(f"template: {name}: the template nests too deeply to parse") from None

    def execute(self, data: Any, name: str | None = None) -> str:
        """The output of template `name` (default: the one parsed from the text) with `data` as dot."""
        name = name or self.name
        tree = self.trees.get(name)
        if tree is None:
            raise ParseError(f'template: no template "{name}" associated with template "{self.name}"')
        # a Python None is Go's nil data: no value at all
        out = State(name, self.funcs, self.trees).run(tree, MISSING if data is None else data)
        if not out.isascii():
            try:
                out.encode("utf-8")
            except UnicodeEncodeError:  # bytes that are not UTF-8 (from `slice` or "\xff"): as U+FFFD
                out = out.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return out

    def tree_string(self, name: str | None = None, quote_text: bool = True) -> str:
        """A tree's String() form (Go's parse tests print text nodes quoted)."""
        tree = self.trees[name or self.name]
        return tree.root.string(quote_text) if tree.root is not None else ""
