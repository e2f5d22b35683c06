"""Evaluation of pipelines, commands, fields, arguments and calls (the eval half of Go's exec.go).

A value that came out of an interface slot (an element of a JSON object or array) is "interface
typed" in Go: it matters for a nil (JSON null) and for the type an error names. The evaluator tracks it
where Go's behaviour shows it: field chains, the range dot and range variables."""

from __future__ import annotations

from typing import Any, NoReturn

from .funcs import NILABLE, GoFunc
from .nodes import (
    BoolNode,
    ChainNode,
    CommandNode,
    DotNode,
    FieldNode,
    IdentifierNode,
    NilNode,
    Node,
    NumberNode,
    PipeNode,
    StringNode,
    VariableNode,
)
from .strconv import quote
from .values import MISSING, U8, GoUint, StrMap, is_true, type_name

NOFINAL: Any = object()  # Go's missingVal: no value piped in from a previous command


class ExecError(ValueError):
    """A template that fails while executing; the message is Go's (`template: x:1:5: executing ...`)."""


class Evaluator:
    __slots__ = ("depth", "dot_iface", "funcs", "name", "node", "out", "trees", "vars")

    def __init__(self, name: str, funcs: dict[str, GoFunc]):
        self.name = name
        self.funcs = funcs
        self.node: Node | None = None
        self.vars: list[list[Any]] = []  # [name, value, interface-typed]
        self.depth = 0
        self.dot_iface = False

    # ---- errors and variables ----------------------------------------------------------------------

    def errorf(self, msg: str) -> NoReturn:
        node = self.node
        if node is None:
            raise ExecError(f"template: {self.name}: {msg}")
        location, context = node.tree.error_context(node)
        raise ExecError(f"template: {location}: executing {quote(self.name)} at <{context}>: {msg}")

    def var_value(self, name: str) -> tuple[Any, bool]:
        for v in reversed(self.vars):
            if v[0] == name:
                return v[1], v[2]
        self.errorf(f"undefined variable: {name}")

    def set_var(self, name: str, value: Any, iface: bool = False) -> None:
        for v in reversed(self.vars):
            if v[0] == name:
                v[1], v[2] = value, iface
                return
        self.errorf(f"undefined variable: {name}")

    # ---- pipelines and commands --------------------------------------------------------------------

    def eval_pipeline(self, dot: Any, pipe: PipeNode | None) -> Any:
        if pipe is None:
            return MISSING
        field = pipe.field
        if field is not None:  # the common {{.a.b}}: one command, one field, no declaration
            value = self.field_value(dot, field)
            return MISSING if value is None else value
        self.node = pipe
        value = NOFINAL
        for cmd in pipe.cmds:
            value = self.eval_command(dot, cmd, value)
            if value is None:  # dig into an interface: a nil one is no value
                value = MISSING
        for v in pipe.decl:
            if pipe.is_assign:
                self.set_var(v.ident[0], value)
            else:
                self.vars.append([v.ident[0], value, False])
        return value

    def not_a_function(self, args: list[Node], final: Any) -> None:
        if len(args) > 1 or final is not NOFINAL:
            self.errorf(f"can't give argument to non-function {args[0]}")

    def eval_command(self, dot: Any, cmd: CommandNode, final: Any) -> Any:
        first = cmd.args[0]
        t = type(first)
        if t is FieldNode:
            return self.eval_field_node(dot, first, cmd.args, final)  # type: ignore[arg-type]
        if t is ChainNode:
            return self.eval_chain_node(dot, first, cmd.args, final)  # type: ignore[arg-type]
        if t is IdentifierNode:
            return self.eval_function(dot, first, cmd, cmd.args, final)  # type: ignore[arg-type]
        if t is PipeNode:
            self.not_a_function(cmd.args, final)
            return self.eval_pipeline(dot, first)  # type: ignore[arg-type]
        if t is VariableNode:
            return self.eval_variable_node(dot, first, cmd.args, final)  # type: ignore[arg-type]
        self.node = first
        self.not_a_function(cmd.args, final)
        if t is BoolNode:
            return first.true  # type: ignore[attr-defined]
        if t is DotNode:
            return dot
        if t is NilNode:
            self.errorf("nil is not a command")
        if t is NumberNode:
            return self.ideal_constant(first)  # type: ignore[arg-type]
        if t is StringNode:
            return first.text  # type: ignore[attr-defined]
        self.errorf(f"can't evaluate command {quote(str(first))}")

    def ideal_constant(self, c: NumberNode) -> Any:
        self.node = c
        text = c.text
        if c.is_complex:
            return c.complex128
        hex_int = len(text) > 2 and text[0] == "0" and text[1] in "xX" and not any(x in text for x in "pP")
        if c.is_float and not hex_int and text[:1] != "'" and any(x in text for x in ".eEpP"):
            return c.float64
        if c.is_int:
            return c.int64
        if c.is_uint:
            self.errorf(f"{text} overflows int")
        return MISSING

    # ---- fields --------------------------------------------------------------------------------------

    def eval_field_node(self, dot: Any, field: FieldNode, args: list[Node] | None, final: Any) -> Any:
        self.node = field
        return self.eval_field_chain(dot, dot, self.dot_iface, field, field.ident, args, final)

    def eval_chain_node(self, dot: Any, chain: ChainNode, args: list[Node] | None, final: Any) -> Any:
        self.node = chain
        if not chain.field:
            self.errorf("internal error: no fields in evalChainNode")
        if type(chain.node) is NilNode:
            self.errorf(f"indirection through explicit nil in {chain}")
        iface = False
        if type(chain.node) is DotNode:
            iface = self.dot_iface
        elif isinstance(chain.node, VariableNode) and len(chain.node.ident) == 1:
            iface = self.var_value(chain.node.ident[0])[1]
        pipe = self.eval_arg(dot, None, chain.node)
        return self.eval_field_chain(dot, pipe, iface, chain, chain.field, args, final)

    def eval_variable_node(self, dot: Any, v: VariableNode, args: list[Node] | None, final: Any) -> Any:
        self.node = v
        value, iface = self.var_value(v.ident[0])
        if len(v.ident) == 1:
            self.not_a_function(args or [v], final)
            return value
        return self.eval_field_chain(dot, value, iface, v, v.ident[1:], args, final)

    def field_value(self, dot: Any, field: FieldNode) -> Any:
        """A lone field's value: map lookups all the way, else the general evaluation (and its errors)."""
        self.node = field
        recv = dot
        for name in field.ident:
            if isinstance(recv, dict):
                recv = recv.get(name, MISSING)
            elif recv is MISSING:
                return MISSING
            else:
                return self.eval_field_chain(dot, dot, self.dot_iface, field, field.ident, None, NOFINAL)
        return recv

    def eval_field_chain(self, dot: Any, receiver: Any, iface: bool, node: Node, ident: list[str],
                         args: list[Node] | None, final: Any) -> Any:
        last = len(ident) - 1
        for i in range(last):
            if type(receiver) is dict:  # the fast path: a key of a JSON object
                receiver = receiver.get(ident[i], MISSING)
                iface = True
            else:
                receiver, iface = self.eval_field(ident[i], node, None, NOFINAL, receiver, iface)
        if type(receiver) is dict and final is NOFINAL and (args is None or len(args) < 2):
            return receiver.get(ident[last], MISSING)
        return self.eval_field(ident[last], node, args, final, receiver, iface)[0]

    def eval_field(self, name: str, node: Node, args: list[Node] | None, final: Any, receiver: Any,
                   iface: bool) -> tuple[Any, bool]:
        if receiver is MISSING:
            return MISSING, False
        typ = "interface {}" if iface else type_name(receiver)
        if receiver is None:
            self.errorf(f"nil pointer evaluating {typ}.{name}")
        if isinstance(receiver, dict):
            if (args is not None and len(args) > 1) or final is not NOFINAL:
                self.errorf(f"{name} is not a method but has arguments")
            if isinstance(receiver, StrMap):
                return receiver.get(name, MISSING), False
            v = receiver.get(name, MISSING)
            return v, v is not MISSING
        self.errorf(f"can't evaluate field {name} in type {typ}")

    # ---- functions and arguments ---------------------------------------------------------------------

    def eval_function(self, dot: Any, node: IdentifierNode, cmd: Node, args: list[Node] | None,
                      final: Any) -> Any:
        self.node = node
        fn = self.funcs.get(node.ident)
        if fn is None:
            self.errorf(f"{quote(node.ident)} is not a defined function")
        return self.eval_call(dot, fn, cmd, node.ident, args, final)

    def eval_call(self, dot: Any, fn: GoFunc, node: Node, name: str, args: list[Node] | None,
                  final: Any) -> Any:
        argn = args[1:] if args is not None else []
        num_in = len(argn) + (0 if final is NOFINAL else 1)
        params, variadic = fn.params, fn.variadic
        num_fixed = len(params) if variadic is not None else len(argn)
        if variadic is not None:
            if num_in < num_fixed:
                self.errorf(f"wrong number of args for {name}: want at least {num_fixed} got {len(argn)}")
        elif num_in != len(params):
            self.errorf(f"wrong number of args for {name}: want {len(params)} got {num_in}")
        if fn.builtin and (name == "and" or name == "or"):
            want = name == "or"
            v: Any = MISSING
            for arg in argn:
                v = self.eval_arg(dot, "value", arg)
                if is_true(v) == want:
                    return v
            if final is not NOFINAL:
                v = self.validate_type(final, "value")
            return v
        argv = [self.eval_arg(dot, params[i], argn[i]) for i in range(min(num_fixed, len(argn)))]
        if variadic is not None:
            argv.extend(self.eval_arg(dot, variadic, a) for a in argn[num_fixed:])
        if final is not NOFINAL:
            # the piped value is the last argument: a fixed parameter's type or the variadic one
            last = params[num_in - 1] if variadic is None or num_in - 1 < num_fixed else variadic
            argv.append(self.validate_type(final, last))
        if fn.builtin and name == "call":
            callee = str(argn[0]) if argn else (final if type(final) is str else
                                               f"<{type_name(final)} Value>")
            argv.insert(0, callee)
        try:
            return fn.impl(*argv)
        except ExecError:
            raise
        except Exception as e:  # its error result (FuncError), or a failure Go would recover as a panic
            self.node = node
            self.errorf(f"error calling {name}: {e}")

    def validate_type(self, value: Any, typ: str | None) -> Any:
        if value is MISSING:
            if typ is None or typ == "value":
                return MISSING
            if typ in NILABLE:
                return None if typ == "any" else MISSING
            self.errorf(f"invalid value; expected {typ}")
        if typ is None or typ == "value" or typ == "any":
            return value
        got = type_name(value)
        if got == typ:
            return value
        self.errorf(f"wrong type for value; expected {typ}; got {got}")

    def eval_arg(self, dot: Any, typ: str | None, n: Node) -> Any:
        self.node = n
        t = type(n)
        if t is DotNode:
            return self.validate_type(dot, typ)
        if t is NilNode:
            if typ is None or typ in NILABLE:
                return None if typ == "any" else MISSING
            self.errorf(f"cannot assign nil to {typ}")
        if t is FieldNode:
            return self.validate_type(self.field_value(dot, n), typ)  # type: ignore[arg-type]
        if t is VariableNode:
            return self.validate_type(self.eval_variable_node(dot, n, None, NOFINAL), typ)  # type: ignore[arg-type]
        if t is PipeNode:
            return self.validate_type(self.eval_pipeline(dot, n), typ)  # type: ignore[arg-type]
        if t is IdentifierNode:
            return self.validate_type(self.eval_function(dot, n, n, None, NOFINAL), typ)  # type: ignore[arg-type]
        if t is ChainNode:
            return self.validate_type(self.eval_chain_node(dot, n, None, NOFINAL), typ)  # type: ignore[arg-type]
        if typ == "any" or typ == "value" or typ is None:
            if t is BoolNode:
                return n.true  # type: ignore[attr-defined]
            if t is NumberNode:
                return self.ideal_constant(n)  # type: ignore[arg-type]
            if t is StringNode:
                return n.text  # type: ignore[attr-defined]
            self.errorf(f"can't handle assignment of {n} to empty interface argument")
        return self._literal(typ, n)

    def _literal(self, typ: str, n: Node) -> Any:
        if typ == "string":
            if isinstance(n, StringNode):
                return n.text
            self.errorf(f"expected string; found {n}")
        if typ == "bool":
            if isinstance(n, BoolNode):
                return n.true
            self.errorf(f"expected bool; found {n}")
        if typ in ("int", "float64", "complex128", "uint", "uint8"):
            if isinstance(n, NumberNode):
                if typ == "int" and n.is_int:
                    return n.int64
                if typ == "float64" and n.is_float:
                    return n.float64
                if typ == "complex128" and n.is_complex:
                    return n.complex128
                if typ in ("uint", "uint8") and n.is_uint:
                    return U8(n.uint64) if typ == "uint8" else GoUint(n.uint64)
            what = {"int": "integer", "float64": "float", "complex128": "complex"}.get(
                typ, "unsigned integer")
            self.errorf(f"expected {what}; found {n}")
        self.errorf(f"can't handle {n} for arg of type {typ}")
