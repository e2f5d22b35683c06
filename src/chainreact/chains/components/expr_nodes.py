"""Expression components: exprFilter, exprTransform, switch, metadataTransform, text/template."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError
from ..exprs import expr_template
from ..gotemplate import RULEGO_FUNCS, GoTemplate, Int64, ParseError, StrMap, from_json, json_value
from ..msg import DEFAULT, FALSE, JSON, SUCCESS, TRUE, RuleMsg, to_data_string
from .base import Component, NodeConfig, register

if TYPE_CHECKING:
    from ..context import NodeContext


class ExprFilterConfig(NodeConfig):
    expr: str = ""


@register
class ExprFilter(Component):
    """True when the expression yields boolean true, else False; evaluation errors go to Failure."""

    type_name = "exprFilter"
    Config = ExprFilterConfig
    config: ExprFilterConfig

    def init(self) -> None:
        if not self.config.expr.strip():
            raise ValueError("expr can not be empty")
        self.e = expr_template(self.config.expr)

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        try:
            out = self.e.run(ctx.env(msg, False))
        except Exception as e:
            ctx.tell_failure(msg, e)
            return
        ctx.tell_next(msg, TRUE if out is True else FALSE)


class ExprTransformConfig(NodeConfig):
    expr: str = ""
    mapping: dict[str, str] = {}


@register
class ExprTransform(Component):
    """`expr`: its value becomes the data (strings as they are, others as JSON). Else `mapping`: an object
    of field -> expression becomes the JSON data. `expr` wins when both are set."""

    type_name = "exprTransform"
    Config = ExprTransformConfig
    config: ExprTransformConfig

    def init(self) -> None:
        c = self.config
        self.e = expr_template(c.expr) if c.expr.strip() else None
        # neither expr nor mapping: RuleGo answers an empty JSON object
        self.mapping = {k: expr_template(v) for k, v in c.mapping.items()} if self.e is None else {}

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        env = ctx.env(msg, False)
        try:
            if self.e is not None:
                result = self.e.run(env)
            else:
                result = {k: e.run(env) for k, e in self.mapping.items()}
                msg.data_type = JSON
        except Exception as e:
            ctx.tell_failure(msg, e)
            return
        msg.data = to_data_string(result)
        ctx.tell_success(msg)


class SwitchCase(NodeConfig):
    case: str
    then: str


class SwitchConfig(NodeConfig):
    cases: list[SwitchCase] = []


@register
class Switch(Component):
    """The first case whose expression is true routes on its `then` relation; no match: Default.
    A case whose evaluation fails is skipped."""

    type_name = "switch"
    Config = SwitchConfig
    config: SwitchConfig

    def init(self) -> None:
        self.cases = [(expr_template(c.case), c.then) for c in self.config.cases]

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        env = ctx.env(msg, False)
        for e, then in self.cases:
            try:
                out = e.run(env)
            except Exception:
                continue
            if out is True:
                ctx.tell_next(msg, then)
                return
        ctx.tell_next(msg, DEFAULT)


class MetadataTransformConfig(NodeConfig):
    mapping: dict[str, str] = {}
    isNew: bool = False


@register
class MetadataTransform(Component):
    """Sets metadata keys from expressions (values as strings); `isNew` replaces the whole metadata."""

    type_name = "metadataTransform"
    Config = MetadataTransformConfig
    config: MetadataTransformConfig

    def init(self) -> None:
        self.mapping = {k: expr_template(v) for k, v in self.config.mapping.items()}

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        env = ctx.env(msg, False)
        out: dict[str, str] = {}
        try:
            for k, e in self.mapping.items():
                out[k] = to_data_string(e.run(env))
        except Exception as e:
            ctx.tell_failure(msg, e)
            return
        if self.config.isNew:
            msg.metadata = out
        else:
            msg.metadata.update(out)
        ctx.tell_success(msg)


class TemplateConfig(NodeConfig):
    template: str = ""


def _go_map(m: dict[str, Any]) -> Any:
    """RuleGo's metadata, vars and global are map[string]string."""
    return StrMap(m) if all(type(v) is str for v in m.values()) else json_value(m)


def template_env(ctx: NodeContext, msg: RuleMsg) -> dict[str, Any]:
    """The node's dot: RuleGo's env with Go's types: `.msg` decoded as encoding/json decodes it (every
    number a float64), `.metadata` a map[string]string; `.type` is the message type, as the node's
    RuleGo documentation says (RuleGo's own engine only sets `.msgType`)."""
    env = ctx.env(msg, False)
    if msg.data_type == JSON:  # the engine's parse (cached on the message) with Go's float64 numbers
        parsed = env["msg"]
        env["msg"] = json_value(parsed) if type(parsed) is not str else from_json(msg.data)
    env["metadata"] = StrMap(msg.metadata)
    env["type"] = msg.type
    env["ts"] = Int64(msg.ts)
    for key in ("vars", "global"):
        if isinstance(env.get(key), dict):
            env[key] = _go_map(env[key])
    for nid in ctx.node.chain.referenced_nodes or ():
        out = env.get(nid)
        if isinstance(out, dict):  # an upstream node's output, `.nodeId.msg`
            env[nid] = {**out, "msg": json_value(out.get("msg")),
                        "metadata": StrMap(out.get("metadata") or {})}
    return env


@register
class TextTemplate(Component):
    """Go's text/template (chains/gotemplate: the whole language, Go's fmt, Go's errors) over
    `.id .ts .data .msg .metadata .msgType .type .dataType`; the output becomes the data.
    `file:/path` reads the template from a file (named after the file in errors, as RuleGo names it)."""

    type_name = "text/template"
    Config = TemplateConfig
    config: TemplateConfig

    def init(self) -> None:
        text, name = self.config.template, "template"
        if text.startswith("file:"):
            path = text[5:]
            name = os.path.basename(path)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                msg = f"open {path}: {e.strerror or e}"
                raise ConfigError(msg, errors=[("$.template", msg)]) from None
        try:
            self.t = GoTemplate(text, name, RULEGO_FUNCS)
        except ParseError as e:
            raise ConfigError(str(e), errors=[("$.template", str(e))]) from None

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        try:
            msg.data = self.t.execute(template_env(ctx, msg))
        except Exception as e:
            ctx.tell_failure(msg, e)
            return
        ctx.tell_next(msg, SUCCESS)
