"""Go text/template's parser (text/template/parse/parse.go): the same grammar, the same three-token
lookahead (so errors report the same line), the same error texts: `template: NAME:LINE: ...`."""

from __future__ import annotations

from collections.abc import Collection
from typing import NoReturn

from . import lexer as lx
from .lexer import Item, Lexer
from .nodes import (
    ActionNode,
    BoolNode,
    BreakNode,
    ChainNode,
    CommandNode,
    ContinueNode,
    DotNode,
    ElseNode,
    EndNode,
    FieldNode,
    IdentifierNode,
    IfNode,
    ListNode,
    NilNode,
    Node,
    NumberNode,
    PipeNode,
    RangeNode,
    StringNode,
    TemplateNode,
    TextNode,
    Tree,
    VariableNode,
    WithNode,
    is_empty_tree,
)
from .numbers import parse_number
from .strconv import SyntaxErr, quote, unquote

MAX_PAREN_DEPTH = 1000  # Go allows 10000; a Python stack is shallower


class ParseError(ValueError):
    """A template that does not parse; the message is Go's (`template: x:1: ...`)."""


class _Parser:
    """One tree being parsed (the main text, a {{define}} or a {{block}}) over a shared lexer."""

    def __init__(self, tree: Tree, lex: Lexer, funcs: Collection[str], tree_set: dict[str, Tree],
                 max_depth: int):
        self.tree, self.lex, self.funcs, self.tree_set = tree, lex, funcs, tree_set
        self.token: list[Item] = [Item(lx.EOF, 0, "", 0)] * 3
        self.peek_count = 0
        self.vars = ["$"]
        self.action_line = 0
        self.range_depth = 0
        self.stack_depth = 0
        self.max_depth = max_depth

    # ---- tokens ------------------------------------------------------------------------------------

    def next(self) -> Item:
        if self.peek_count > 0:
            self.peek_count -= 1
        else:
            self.token[0] = self.lex.next_item()
        return self.token[self.peek_count]

    def backup(self) -> None:
        self.peek_count += 1

    def backup2(self, t1: Item) -> None:
        self.token[1] = t1
        self.peek_count = 2

    def backup3(self, t2: Item, t1: Item) -> None:
        self.token[1], self.token[2] = t1, t2
        self.peek_count = 3

    def peek(self) -> Item:
        if self.peek_count > 0:
            return self.token[self.peek_count - 1]
        self.peek_count = 1
        self.token[0] = self.lex.next_item()
        return self.token[0]

    def next_non_space(self) -> Item:
        while True:
            t = self.next()
            if t.typ != lx.SPACE:
                return t

    def peek_non_space(self) -> Item:
        t = self.next_non_space()
        self.backup()
        return t

    # ---- errors ------------------------------------------------------------------------------------

    def errorf(self, msg: str) -> NoReturn:
        raise ParseError(f"template: {self.tree.parse_name}:{self.token[0].line}: {msg}")

    def expect(self, typ: int, context: str) -> Item:
        t = self.next_non_space()
        if t.typ != typ:
            self.unexpected(t, context)
        return t

    def unexpected(self, t: Item, context: str) -> NoReturn:
        if t.typ == lx.ERROR:
            extra = ""
            if self.action_line != 0 and self.action_line != t.line:
                extra = f" in action started at {self.tree.parse_name}:{self.action_line}"
                if t.val.endswith(" action"):
                    extra = extra[len(" in action"):]
            self.errorf(f"{t}{extra}")
        self.errorf(f"unexpected {t} in {context}")

    def child(self, name: str) -> _Parser:
        tree = Tree(name, self.tree.parse_name, self.tree.text, self.tree.left, self.tree.right)
        return _Parser(tree, self.lex, self.funcs, self.tree_set, self.max_depth)

    def add(self) -> None:
        tree = self.tree_set.get(self.tree.name)
        if tree is None or is_empty_tree(tree.root):
            self.tree_set[self.tree.name] = self.tree
            return
        if not is_empty_tree(self.tree.root):
            self.errorf(f'template: multiple definition of template "{self.tree.name}"')

    # ---- grammar -----------------------------------------------------------------------------------

    def parse(self) -> None:
        self.tree.root = root = ListNode(self.tree, self.peek().pos)
        while self.peek().typ != lx.EOF:
            if self.peek().typ == lx.LEFT_DELIM:
                delim = self.next()
                if self.next_non_space().typ == lx.DEFINE:
                    self.child("definition").parse_definition()
                    continue
                self.backup2(delim)
            n = self.text_or_action()
            if isinstance(n, (EndNode, ElseNode)):
                self.errorf(f"unexpected {n}")
            root.nodes.append(n)
        self.add()

    def parse_definition(self) -> None:
        context = "define clause"
        name = self.next_non_space()
        if name.typ not in (lx.STRING, lx.RAW_STRING):
            self.unexpected(name, context)
        self.tree.name = self._unquote(name.val)
        self.expect(lx.RIGHT_DELIM, context)
        self.tree.root, end = self.item_list()
        if not isinstance(end, EndNode):
            self.errorf(f"unexpected {end} in {context}")
        self.add()

    def item_list(self) -> tuple[ListNode, Node]:
        lst = ListNode(self.tree, self.peek_non_space().pos)
        while self.peek_non_space().typ != lx.EOF:
            n = self.text_or_action()
            if isinstance(n, (EndNode, ElseNode)):
                return lst, n
            lst.nodes.append(n)
        self.errorf("unexpected EOF")

    def text_or_action(self) -> Node:
        t = self.next_non_space()
        if t.typ == lx.TEXT:
            return TextNode(self.tree, t.pos, t.val)
        if t.typ == lx.LEFT_DELIM:
            self.action_line = t.line
            try:
                return self.action()
            finally:
                self.action_line = 0
        self.unexpected(t, "input")

    def action(self) -> Node:
        t = self.next_non_space()
        typ = t.typ
        if typ == lx.BLOCK:
            return self.block_control()
        if typ == lx.BREAK or typ == lx.CONTINUE:
            word = "break" if typ == lx.BREAK else "continue"
            tok = self.next_non_space()
            if tok.typ != lx.RIGHT_DELIM:
                self.unexpected(tok, "{{" + word + "}}")
            if self.range_depth == 0:
                self.errorf("{{" + word + "}} outside {{range}}")
            cls = BreakNode if typ == lx.BREAK else ContinueNode
            return cls(self.tree, t.pos, t.line)
        if typ == lx.ELSE:
            return self.else_control()
        if typ == lx.END:
            return EndNode(self.tree, self.expect(lx.RIGHT_DELIM, "end").pos)
        if typ == lx.IF:
            return IfNode(self.tree, *self.parse_control("if"))
        if typ == lx.RANGE:
            return RangeNode(self.tree, *self.parse_control("range"))
        if typ == lx.TEMPLATE:
            return self.template_control()
        if typ == lx.WITH:
            return WithNode(self.tree, *self.parse_control("with"))
        self.backup()
        t = self.peek()
        return ActionNode(self.tree, t.pos, t.line, self.pipeline("command", lx.RIGHT_DELIM))

    def pipeline(self, context: str, end: int) -> PipeNode:
        t = self.peek_non_space()
        pipe = PipeNode(self.tree, t.pos, t.line)
        while True:  # declarations (the loop is Go's `goto decls` for a range's second variable)
            v = self.peek_non_space()
            if v.typ != lx.VARIABLE:
                break
            self.next()
            after = self.peek()
            nxt = self.peek_non_space()
            if nxt.typ in (lx.ASSIGN, lx.DECLARE):
                pipe.is_assign = nxt.typ == lx.ASSIGN
                self.next_non_space()
                pipe.decl.append(VariableNode(self.tree, v.pos, v.val))
                self.vars.append(v.val)
            elif nxt.typ == lx.CHAR and nxt.val == ",":
                self.next_non_space()
                pipe.decl.append(VariableNode(self.tree, v.pos, v.val))
                self.vars.append(v.val)
                if context == "range" and len(pipe.decl) < 2:
                    if self.peek_non_space().typ in (lx.VARIABLE, lx.RIGHT_DELIM, lx.RIGHT_PAREN):
                        continue
                    self.errorf("range can only initialize variables")
                self.errorf(f"too many declarations in {context}")
            elif after.typ == lx.SPACE:
                self.backup3(v, after)
            else:
                self.backup2(v)
            break
        while True:
            t = self.next_non_space()
            if t.typ == end:
                self.check_pipeline(pipe, context)
                pipe.done()
                return pipe
            if t.typ in (lx.BOOL, lx.CHAR_CONSTANT, lx.COMPLEX, lx.DOT, lx.FIELD, lx.IDENTIFIER,
                         lx.NUMBER, lx.NIL, lx.RAW_STRING, lx.STRING, lx.VARIABLE, lx.LEFT_PAREN):
                self.backup()
                pipe.cmds.append(self.command())
            else:
                self.unexpected(t, context)

    def check_pipeline(self, pipe: PipeNode, context: str) -> None:
        if not pipe.cmds:
            self.errorf(f"missing value for {context}")
        for i, c in enumerate(pipe.cmds[1:]):
            if isinstance(c.args[0], (BoolNode, DotNode, NilNode, NumberNode, StringNode)):
                self.errorf(f"non executable command in pipeline stage {i + 2}")

    def parse_control(self, context: str) -> tuple[int, int, PipeNode, ListNode, ListNode | None]:
        nvars = len(self.vars)
        try:
            pipe = self.pipeline(context, lx.RIGHT_DELIM)
            if context == "range":
                self.range_depth += 1
            lst, nxt = self.item_list()
            if context == "range":
                self.range_depth -= 1
            else_list = None
            if isinstance(nxt, ElseNode):
                # {{else if ...}} and {{else with ...}}: an if/with inside the else branch whose
                # {{end}} also ends this one
                if context == "if" and self.peek().typ == lx.IF:
                    self.next()
                    else_list = ListNode(self.tree, nxt.pos)
                    else_list.nodes.append(IfNode(self.tree, *self.parse_control("if")))
                elif context == "with" and self.peek().typ == lx.WITH:
                    self.next()
                    else_list = ListNode(self.tree, nxt.pos)
                    else_list.nodes.append(WithNode(self.tree, *self.parse_control("with")))
                else:
                    else_list, nxt = self.item_list()
                    if not isinstance(nxt, EndNode):
                        self.errorf(f"expected end; found {nxt}")
            return pipe.pos, pipe.line, pipe, lst, else_list
        finally:
            del self.vars[nvars:]

    def else_control(self) -> Node:
        peek = self.peek_non_space()
        if peek.typ in (lx.IF, lx.WITH):
            return ElseNode(self.tree, peek.pos, peek.line)
        t = self.expect(lx.RIGHT_DELIM, "else")
        return ElseNode(self.tree, t.pos, t.line)

    def block_control(self) -> Node:
        context = "block clause"
        t = self.next_non_space()
        name = self.template_name(t, context)
        pipe = self.pipeline(context, lx.RIGHT_DELIM)
        block = self.child(name)
        block.tree.root, end = block.item_list()
        if not isinstance(end, EndNode):
            self.errorf(f"unexpected {end} in {context}")
        block.add()
        return TemplateNode(self.tree, t.pos, t.line, name, pipe)

    def template_control(self) -> Node:
        context = "template clause"
        t = self.next_non_space()
        name = self.template_name(t, context)
        pipe = None
        if self.next_non_space().typ != lx.RIGHT_DELIM:
            self.backup()
            pipe = self.pipeline(context, lx.RIGHT_DELIM)
        return TemplateNode(self.tree, t.pos, t.line, name, pipe)

    def template_name(self, t: Item, context: str) -> str:
        if t.typ in (lx.STRING, lx.RAW_STRING):
            return self._unquote(t.val)
        self.unexpected(t, context)

    def command(self) -> CommandNode:
        cmd = CommandNode(self.tree, self.peek_non_space().pos)
        while True:
            self.peek_non_space()
            operand = self.operand()
            if operand is not None:
                cmd.args.append(operand)
            t = self.next()
            if t.typ == lx.SPACE:
                continue
            if t.typ in (lx.RIGHT_DELIM, lx.RIGHT_PAREN):
                self.backup()
            elif t.typ != lx.PIPE:
                self.unexpected(t, "operand")
            break
        if not cmd.args:
            self.errorf("empty command")
        return cmd

    def operand(self) -> Node | None:
        node = self.term()
        if node is None:
            return None
        if self.peek().typ == lx.FIELD:
            chain = ChainNode(self.tree, self.peek().pos, node)
            while self.peek().typ == lx.FIELD:
                chain.field.append(self.next().val[1:])
            if isinstance(node, FieldNode):
                return FieldNode(self.tree, chain.pos, str(chain))
            if isinstance(node, VariableNode):
                return VariableNode(self.tree, chain.pos, str(chain))
            if isinstance(node, (BoolNode, StringNode, NumberNode, NilNode, DotNode)):
                self.errorf(f"unexpected . after term {quote(str(node))}")
            return chain
        return node

    def term(self) -> Node | None:
        t = self.next_non_space()
        typ = t.typ
        if typ == lx.IDENTIFIER:
            if t.val not in self.funcs:
                self.errorf(f'function "{t.val}" not defined')
            return IdentifierNode(self.tree, t.pos, t.val)
        if typ == lx.DOT:
            return DotNode(self.tree, t.pos)
        if typ == lx.NIL:
            return NilNode(self.tree, t.pos)
        if typ == lx.VARIABLE:
            v = VariableNode(self.tree, t.pos, t.val)
            if v.ident[0] not in self.vars:
                self.errorf(f"undefined variable {quote(v.ident[0])}")
            return v
        if typ == lx.FIELD:
            return FieldNode(self.tree, t.pos, t.val)
        if typ == lx.BOOL:
            return BoolNode(self.tree, t.pos, t.val == "true")
        if typ in (lx.CHAR_CONSTANT, lx.COMPLEX, lx.NUMBER):
            n = NumberNode(self.tree, t.pos, t.val)
            try:
                parse_number(n, typ == lx.CHAR_CONSTANT, typ == lx.COMPLEX)
            except ValueError as e:
                self.errorf(str(e))
            return n
        if typ == lx.LEFT_PAREN:
            if self.stack_depth >= self.max_depth:
                self.errorf("max expression depth exceeded")
            self.stack_depth += 1
            try:
                return self.pipeline("parenthesized pipeline", lx.RIGHT_PAREN)
            finally:
                self.stack_depth -= 1
        if typ in (lx.STRING, lx.RAW_STRING):
            return StringNode(self.tree, t.pos, t.val, self._unquote(t.val))
        self.backup()
        return None

    def _unquote(self, s: str) -> str:
        try:
            return unquote(s)
        except SyntaxErr as e:
            self.errorf(str(e))


def parse(name: str, text: str, funcs: Collection[str], left: str = "", right: str = "",
          max_depth: int = MAX_PAREN_DEPTH) -> dict[str, Tree]:
    """parse.Parse: every tree the text defines, the main one under `name`."""
    lex = Lexer(text, left, right, break_ok="break" not in funcs, continue_ok="continue" not in funcs)
    tree_set: dict[str, Tree] = {}
    main = Tree(name, name, text, lex.left, lex.right)
    _Parser(main, lex, funcs, tree_set, max_depth).parse()
    return tree_set
