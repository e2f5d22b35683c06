"""The demo agent's tool (examples/demo-agent.json loads it by path: a module next to the document)."""


def add(a: float, b: float) -> float:
    """Add two numbers and return their sum."""
    total = a + b
    # 17 + 25 reads better as "42" than "42.0", for the model and for people.
    return int(total) if float(total).is_integer() else total
