"""RuleGo's expression language (expr-lang) in chainreact: compiled expressions, `${...}` templates,
typed values in configuration, and session values that stay data.

    python examples/expressions.py
"""

from __future__ import annotations

from chainreact.expr import ExprError, compile_expr, parse_template, register_function
from chainreact.template import TemplateContext, render_obj, render_session

# A condition as an exprFilter node writes it: compiled once, run per message.
hot = compile_expr("msg.temperature > 50 && upper(msg.name) == 'BOILER'")
for msg in ({"temperature": 71, "name": "boiler"}, {"temperature": 20, "name": "boiler"}):
    print(f"hot({msg['temperature']}) = {hot.run({'msg': msg})}")

# Predicates, pipes and builtins.
users = [{"Name": "Jo", "Age": 17}, {"Name": "Al", "Age": 30}, {"Name": "Jim", "Age": 42}]
print("adults:", compile_expr("filter(users, .Age >= 18) | map(.Name) | join(', ')").run({"users": users}))

# Your own function, callable from every expression.
register_function("celsius", lambda f: round((f - 32) * 5 / 9, 1))
print("98.6F =", compile_expr("celsius(98.6)").run({}), "C")

# Templates print values as RuleGo does: maps as sorted compact JSON, floats without a trailing .0.
t = parse_template("Reading ${msg.temperature / 2} from ${msg}")
print(t.render({"msg": {"temperature": 71, "unit": "C"}}))

# In configuration, a value that is wholly one ${...} keeps its type.
ctx = TemplateContext(globals={"timeout": 30, "root": "/srv/agent"})
print("config:", render_obj({"timeout": "${global.timeout}", "workDir": "${global.root}/work"}, ctx))

# Session values are data: a user's "${...}" is printed, never evaluated.
print(render_session("Hello {name}, agent ${1 + 1}", {"name": "${env('HOME')}"}, ctx))

# Errors name the problem and the expression.
try:
    compile_expr("msg.name + 1").run({"msg": {"name": "x"}})
except ExprError as e:
    print("error:", e)
