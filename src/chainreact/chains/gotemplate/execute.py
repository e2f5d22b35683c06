"""Execution of a parsed template set (the walk half of Go's exec.go): text, actions, if/with/range with
else, break/continue, variables and their scopes, {{template}} calls."""

from __future__ import annotations

from typing import Any

from .evaluate import Evaluator, ExecError
from .funcs import GoFunc
from .gofmt import sprint_one
from .nodes import (
    ActionNode,
    BreakNode,
    CommentNode,
    ContinueNode,
    IfNode,
    ListNode,
    Node,
    RangeNode,
    TemplateNode,
    TextNode,
    Tree,
    WithNode,
)
from .printf import sprintf
from .strconv import quote
from .values import MISSING, SIZED_INTS, StrMap, type_name

# Go stops at 100,000 nested {{template}} calls; a Python stack holds far fewer.
MAX_EXEC_DEPTH = 100


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class State(Evaluator):
    """One execution: the output, the variable stack and the template being run."""

    __slots__ = ()

    def __init__(self, name: str, funcs: dict[str, GoFunc], trees: dict[str, Tree]):
        self.name, self.funcs, self.trees = name, funcs, trees
        self.node: Node | None = None
        self.vars: list[list[Any]] = []  # [name, value, interface-typed]
        self.depth = 0
        self.dot_iface = False
        self.out: list[str] = []

    def run(self, tree: Tree, data: Any) -> str:
        self.vars = [["$", data, False]]
        if tree.root is None:
            self.errorf(f"{quote(self.name)} is an incomplete or empty template")
        try:
            self.walk(data, tree.root)
        except RecursionError:
            self.node = None
            self.errorf("the template nests too deeply to execute")
        return "".join(self.out)

    def walk(self, dot: Any, node: Node) -> None:
        self.node = node
        t = type(node)
        if t is TextNode:
            self.out.append(node.text)  # type: ignore[attr-defined]
        elif t is ActionNode:
            pipe = node.pipe  # type: ignore[attr-defined]
            val = self.eval_pipeline(dot, pipe)
            if not pipe.decl:
                self.out.append(self.printable(node, val))
        elif t is ListNode:
            out = self.out
            for n in node.nodes:  # type: ignore[attr-defined]
                tn = type(n)
                if tn is TextNode:
                    out.append(n.text)
                elif tn is ActionNode and (n.pipe.field is not None or n.pipe.dot):  # {{.a.b}}, {{.}}
                    v = self.field_value(dot, n.pipe.field) if n.pipe.field is not None else dot
                    out.append(v if type(v) is str else self.printable(n, v))
                else:
                    self.walk(dot, n)
        elif t is IfNode or t is WithNode:
            self.walk_if_or_with(t is WithNode, dot, node)  # type: ignore[arg-type]
        elif t is RangeNode:
            self.walk_range(dot, node)  # type: ignore[arg-type]
        elif t is TemplateNode:
            self.walk_template(dot, node)  # type: ignore[arg-type]
        elif t is BreakNode:
            raise _Break
        elif t is ContinueNode:
            raise _Continue
        elif t is not CommentNode:
            self.errorf(f"unknown node: {node}")

    def printable(self, node: Node, v: Any) -> str:
        """What an action prints: fmt's %v of the value, `<no value>` for none; a function cannot print."""
        if v is MISSING or v is None:
            return "<no value>"
        if isinstance(v, GoFunc):
            self.node = node
            self.errorf(f"can't print {node} of type {type_name(v)}")
        return sprint_one(v)

    def walk_if_or_with(self, is_with: bool, dot: Any, node: IfNode | WithNode) -> None:
        mark = len(self.vars)
        try:
            val = self.eval_pipeline(dot, node.pipe)
            truth = not (val is MISSING or val is None) and (
                len(val) > 0 if isinstance(val, (str, list, dict)) else bool(val))
            if truth:
                if is_with:
                    iface, self.dot_iface = self.dot_iface, False
                    try:
                        self.walk(val, node.list)
                    finally:
                        self.dot_iface = iface
                else:
                    self.walk(dot, node.list)
            elif node.else_list is not None:
                self.walk(dot, node.else_list)
        finally:
            del self.vars[mark:]

    def walk_range(self, dot: Any, r: RangeNode) -> None:
        self.node = r
        mark0 = len(self.vars)
        iface0 = self.dot_iface
        try:
            val = self.eval_pipeline(dot, r.pipe)
            mark = len(self.vars)
            decl = r.pipe.decl
            if type(val) is int or isinstance(val, SIZED_INTS):
                if len(decl) > 1:
                    self.errorf(f"can't use {sprintf('%v', val)} to iterate over more than one variable")
                if val > 0:
                    make = type(val)
                    for i in range(val):
                        self._iteration(r, mark, MISSING, make(i), False)
                    return
            elif isinstance(val, (list, tuple)):
                if val:
                    for i, e in enumerate(val):
                        self._iteration(r, mark, i, e, True)
                    return
            elif isinstance(val, dict):
                if val:
                    inner = not isinstance(val, StrMap)
                    for k in sorted(val):
                        self._iteration(r, mark, k, val[k], inner)
                    return
            elif val is not MISSING:
                self.errorf(f"range can't iterate over {sprintf('%v', val)}")
            if r.else_list is not None:
                self.walk(dot, r.else_list)
        except _Break:
            pass
        finally:
            self.dot_iface = iface0
            del self.vars[mark0:]

    def _iteration(self, r: RangeNode, mark: int, index: Any, elem: Any, iface: bool) -> None:
        pipe = r.pipe
        decl = pipe.decl
        if decl:
            if pipe.is_assign:
                if len(decl) > 1:
                    self.set_var(decl[0].ident[0], index)
                else:
                    self.set_var(decl[0].ident[0], elem, iface)
            else:
                self.vars[-1][1:] = [elem, iface]
        if len(decl) > 1:
            if pipe.is_assign:
                self.set_var(decl[1].ident[0], elem, iface)
            else:
                self.vars[-2][1:] = [index, False]
        self.dot_iface = iface
        try:
            self.walk(elem, r.list)
        except _Continue:
            pass
        finally:
            del self.vars[mark:]

    def walk_template(self, dot: Any, t: TemplateNode) -> None:
        self.node = t
        tree = self.trees.get(t.name)
        if tree is None or tree.root is None:
            self.errorf(f"template {quote(t.name)} not defined")
        if self.depth >= MAX_EXEC_DEPTH:
            self.errorf(f"exceeded maximum template depth ({MAX_EXEC_DEPTH})")
        dot = self.eval_pipeline(dot, t.pipe)  # variables it declares stay in the caller's scope
        saved = self.vars, self.name, self.dot_iface
        self.vars, self.name, self.dot_iface = [["$", dot, False]], t.name, False
        self.depth += 1
        try:
            self.walk(dot, tree.root)
        finally:
            self.vars, self.name, self.dot_iface = saved
            self.depth -= 1


__all__ = ["MAX_EXEC_DEPTH", "ExecError", "State"]
