"""The parse tree of text/template (text/template/parse/node.go): the nodes, and their String() form,
which Go's exec errors quote (`executing "t" at <.x.y>`)."""

from __future__ import annotations

from typing import Any

from .strconv import quote


class Tree:
    """One parsed template: its name, the name of the text it came from (for errors), and its root."""

    __slots__ = ("left", "name", "parse_name", "right", "root", "text")

    def __init__(self, name: str, parse_name: str, text: str, left: str, right: str):
        self.name, self.parse_name, self.text = name, parse_name, text
        self.left, self.right = left, right
        self.root: ListNode | None = None

    def error_context(self, node: Node) -> tuple[str, str]:
        """Go's ErrorContext: "name:line:col" (col in bytes from the line start, 0-based) and the node."""
        text = self.text[:node.pos]
        nl = text.rfind("\n")
        col = len(text[nl + 1:].encode("utf-8", "surrogateescape"))
        return f"{self.parse_name}:{1 + text.count(chr(10))}:{col}", str(node)


class Node:
    __slots__ = ("pos", "tree")
    kind = ""

    def __init__(self, tree: Tree, pos: int):
        self.tree, self.pos = tree, pos

    def write(self, out: list[str], quote_text: bool) -> None:
        raise NotImplementedError

    def string(self, quote_text: bool = False) -> str:
        out: list[str] = []
        self.write(out, quote_text)
        return "".join(out)

    def __str__(self) -> str:
        return self.string()


class ListNode(Node):
    __slots__ = ("nodes",)
    kind = "list"

    def __init__(self, tree: Tree, pos: int):
        super().__init__(tree, pos)
        self.nodes: list[Node] = []

    def write(self, out: list[str], quote_text: bool) -> None:
        for n in self.nodes:
            n.write(out, quote_text)


class TextNode(Node):
    __slots__ = ("text",)
    kind = "text"

    def __init__(self, tree: Tree, pos: int, text: str):
        super().__init__(tree, pos)
        self.text = text

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(quote(self.text) if quote_text else self.text)


class CommentNode(Node):
    __slots__ = ("text",)
    kind = "comment"

    def __init__(self, tree: Tree, pos: int, text: str):
        super().__init__(tree, pos)
        self.text = text

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(self.tree.left + self.text + self.tree.right)


class PipeNode(Node):
    __slots__ = ("cmds", "decl", "dot", "field", "is_assign", "line")
    kind = "pipe"

    def __init__(self, tree: Tree, pos: int, line: int):
        super().__init__(tree, pos)
        self.line = line
        self.is_assign = False
        self.decl: list[VariableNode] = []
        self.cmds: list[CommandNode] = []
        self.field: FieldNode | None = None  # set when the pipeline is just one field: a fast path
        self.dot = False  # the pipeline is just the dot: another

    def done(self) -> None:
        """The pipeline is complete: note whether it is a lone field (`{{.a.b}}`) or the dot."""
        if not self.decl and len(self.cmds) == 1 and len(self.cmds[0].args) == 1:
            arg = self.cmds[0].args[0]
            if type(arg) is FieldNode:
                self.field = arg
            self.dot = type(arg) is DotNode

    def write(self, out: list[str], quote_text: bool) -> None:
        if self.decl:
            for i, v in enumerate(self.decl):
                if i:
                    out.append(", ")
                v.write(out, quote_text)
            out.append(" = " if self.is_assign else " := ")
        for i, c in enumerate(self.cmds):
            if i:
                out.append(" | ")
            c.write(out, quote_text)


class ActionNode(Node):
    __slots__ = ("line", "pipe")
    kind = "action"

    def __init__(self, tree: Tree, pos: int, line: int, pipe: PipeNode):
        super().__init__(tree, pos)
        self.line, self.pipe = line, pipe

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(self.tree.left)
        self.pipe.write(out, quote_text)
        out.append(self.tree.right)


class CommandNode(Node):
    __slots__ = ("args",)
    kind = "command"

    def __init__(self, tree: Tree, pos: int):
        super().__init__(tree, pos)
        self.args: list[Node] = []

    def write(self, out: list[str], quote_text: bool) -> None:
        for i, a in enumerate(self.args):
            if i:
                out.append(" ")
            if isinstance(a, PipeNode):
                out.append("(")
                a.write(out, quote_text)
                out.append(")")
            else:
                a.write(out, quote_text)


class IdentifierNode(Node):
    __slots__ = ("ident",)
    kind = "identifier"

    def __init__(self, tree: Tree, pos: int, ident: str):
        super().__init__(tree, pos)
        self.ident = ident

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(self.ident)


class VariableNode(Node):
    __slots__ = ("ident",)
    kind = "variable"

    def __init__(self, tree: Tree, pos: int, ident: str):
        super().__init__(tree, pos)
        self.ident = ident.split(".")

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(".".join(self.ident))


class DotNode(Node):
    __slots__ = ()
    kind = "dot"

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(".")


class NilNode(Node):
    __slots__ = ()
    kind = "nil"

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append("nil")


class FieldNode(Node):
    __slots__ = ("ident",)
    kind = "field"

    def __init__(self, tree: Tree, pos: int, ident: str):
        super().__init__(tree, pos)
        self.ident = ident[1:].split(".")

    def write(self, out: list[str], quote_text: bool) -> None:
        for i in self.ident:
            out.append("." + i)


class ChainNode(Node):
    __slots__ = ("field", "node")
    kind = "chain"

    def __init__(self, tree: Tree, pos: int, node: Node):
        super().__init__(tree, pos)
        self.node = node
        self.field: list[str] = []

    def write(self, out: list[str], quote_text: bool) -> None:
        if isinstance(self.node, PipeNode):
            out.append("(")
            self.node.write(out, quote_text)
            out.append(")")
        else:
            self.node.write(out, quote_text)
        for f in self.field:
            out.append("." + f)


class BoolNode(Node):
    __slots__ = ("true",)
    kind = "bool"

    def __init__(self, tree: Tree, pos: int, true: bool):
        super().__init__(tree, pos)
        self.true = true

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append("true" if self.true else "false")


class NumberNode(Node):
    """A numeric constant with every Go type it can be: int, uint, float64, complex128."""

    __slots__ = (
        "complex128",
        "float64",
        "int64",
        "is_complex",
        "is_float",
        "is_int",
        "is_uint",
        "text",
        "uint64",
    )
    kind = "number"

    def __init__(self, tree: Tree, pos: int, text: str):
        super().__init__(tree, pos)
        self.text = text
        self.is_int = self.is_uint = self.is_float = self.is_complex = False
        self.int64 = self.uint64 = 0
        self.float64 = 0.0
        self.complex128 = 0j

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(self.text)


class StringNode(Node):
    __slots__ = ("quoted", "text")
    kind = "string"

    def __init__(self, tree: Tree, pos: int, quoted: str, text: str):
        super().__init__(tree, pos)
        self.quoted, self.text = quoted, text

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(self.quoted)


class EndNode(Node):
    __slots__ = ()
    kind = "end"

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(self.tree.left + "end" + self.tree.right)


class ElseNode(Node):
    __slots__ = ("line",)
    kind = "else"

    def __init__(self, tree: Tree, pos: int, line: int):
        super().__init__(tree, pos)
        self.line = line

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(self.tree.left + "else" + self.tree.right)


class BranchNode(Node):
    """if, range and with."""

    __slots__ = ("else_list", "line", "list", "pipe")

    def __init__(self, tree: Tree, pos: int, line: int, pipe: PipeNode, lst: ListNode,
                 else_list: ListNode | None):
        super().__init__(tree, pos)
        self.line, self.pipe, self.list, self.else_list = line, pipe, lst, else_list

    def write(self, out: list[str], quote_text: bool) -> None:
        left, right = self.tree.left, self.tree.right
        out.append(left + self.kind + " ")
        self.pipe.write(out, quote_text)
        out.append(right)
        self.list.write(out, quote_text)
        if self.else_list is not None:
            out.append(left + "else" + right)
            self.else_list.write(out, quote_text)
        out.append(left + "end" + right)


class IfNode(BranchNode):
    __slots__ = ()
    kind = "if"


class RangeNode(BranchNode):
    __slots__ = ()
    kind = "range"


class WithNode(BranchNode):
    __slots__ = ()
    kind = "with"


class BreakNode(Node):
    __slots__ = ("line",)
    kind = "break"

    def __init__(self, tree: Tree, pos: int, line: int):
        super().__init__(tree, pos)
        self.line = line

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(self.tree.left + "break" + self.tree.right)


class ContinueNode(BreakNode):
    __slots__ = ()
    kind = "continue"

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(self.tree.left + "continue" + self.tree.right)


class TemplateNode(Node):
    __slots__ = ("line", "name", "pipe")
    kind = "template"

    def __init__(self, tree: Tree, pos: int, line: int, name: str, pipe: PipeNode | None):
        super().__init__(tree, pos)
        self.line, self.name, self.pipe = line, name, pipe

    def write(self, out: list[str], quote_text: bool) -> None:
        out.append(self.tree.left + "template " + quote(self.name))
        if self.pipe is not None:
            out.append(" ")
            self.pipe.write(out, quote_text)
        out.append(self.tree.right)


# unicode.IsSpace, as bytes.TrimSpace trims
_GO_SPACE = ("\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
             + "\u2028\u2029\u202f\u205f\u3000")


def is_empty_tree(n: Any) -> bool:
    """parse.IsEmptyTree: nothing but space and comments."""
    if n is None or isinstance(n, CommentNode):
        return True
    if isinstance(n, ListNode):
        return all(is_empty_tree(x) for x in n.nodes)
    if isinstance(n, TextNode):
        return not n.text.strip(_GO_SPACE)
    return False
