"""Regular expressions that come from a model run on RE2, whose matching time is linear in the input.

Python's `re` backtracks: `(a+)+$` on 28 bytes takes seconds, and it holds the GIL while it does, so a
timeout cannot even fire. RE2 (the `google-re2` package, a core dependency) has no backtracking, so no
pattern can stall a search; the price is that backreferences and lookaround are not supported, which
is said in the error a model gets. Imported lazily: only the search tools need it.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

# A pattern longer than this is almost certainly a mistake (or an attack on the compiler's memory).
MAX_PATTERN_CHARS = 10_000
# RE2's per-pattern memory budget (its default is 8 MiB); compilation fails beyond it.
MAX_PROGRAM_BYTES = 32 << 20


class LinearPattern(Protocol):
    """The part of RE2's compiled pattern the tools use (mirrors `re.Pattern`)."""

    pattern: str

    def search(self, text: Any, pos: int | None = None, endpos: int | None = None) -> Any: ...

    def match(self, text: Any, pos: int | None = None, endpos: int | None = None) -> Any: ...

    def fullmatch(self, text: Any, pos: int | None = None, endpos: int | None = None) -> Any: ...


class PatternError(ValueError):
    """The pattern is invalid or uses a feature RE2 cannot run in linear time; the message says which."""


def compile_linear(pattern: str, *, ignore_case: bool = False) -> LinearPattern:
    """Compile `pattern` (Python `re` syntax minus backreferences and lookaround) with RE2."""
    # Python spells "end of text" \Z, RE2 \z; translate it so patterns written for `re` keep working.
    translated = re.sub(r"(?<!\\)((?:\\\\)*)\\Z", r"\1\\z", pattern)
    try:
        return compile_re2(translated, ignore_case=ignore_case, shown=pattern)
    except RE2Error as e:
        raise PatternError(_explain(pattern, str(e))) from None


class RE2Error(PatternError):
    """RE2 refused the (translated) pattern; the text is RE2's reason."""


def compile_re2(text: str, *, ignore_case: bool = False, shown: str | None = None) -> LinearPattern:
    """`text` (RE2 syntax) compiled with the length and memory bounds; RE2Error with RE2's reason.
    PatternError when the pattern (`shown`: as the user wrote it) is too long."""
    import re2  # lazy: the google-re2 extension is only needed once a pattern is used

    shown = text if shown is None else shown
    if len(shown) > MAX_PATTERN_CHARS:
        raise PatternError(f"the pattern is {len(shown)} characters long; the limit is {MAX_PATTERN_CHARS}")
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.max_mem = MAX_PROGRAM_BYTES
    options.log_errors = False
    try:
        return re2.compile(text, options)
    except re2.error as e:
        detail = e.args[0] if e.args else ""
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise RE2Error(str(detail)) from None


def _explain(pattern: str, detail: str) -> str:
    try:
        re.compile(pattern)
    except re.error as e:
        return f"invalid regular expression: {e}"
    except (RecursionError, OverflowError):
        return "invalid regular expression: too deeply nested"
    # Valid for Python but not for RE2: nearly always a backreference or a lookaround.
    return (f"the pattern uses a feature the search engine (RE2, linear time) does not support ({detail}); "
            "backreferences (\\1) and lookaround ((?=...), (?!...), (?<=...), (?<!...)) are not available")
