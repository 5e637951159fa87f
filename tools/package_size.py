"""Lines of lecture_utils, and how many of them check arguments (issue 11's before/after measure).

    python tools/package_size.py [REV]     # REV: a git revision to measure instead of the working tree

A line counts as an argument check when it belongs to an `if` whose body only raises
ValueError/TypeError (the test and the raise), to a call of a `check_*`/`_check*` helper, or to
the body of such a helper. Code lines are source lines less blank lines, comments and docstrings.
"""

import ast
import subprocess
import sys
from pathlib import Path

ERRORS = {"ValueError", "TypeError"}


def _raises_only(body: list[ast.stmt]) -> bool:
    """True when a block is nothing but `raise ValueError(...)` / `raise TypeError(...)`."""
    return all(
        isinstance(s, ast.Raise) and isinstance(s.exc, ast.Call) and getattr(s.exc.func, "id", "") in ERRORS
        for s in body
    )


def _is_check_name(name: str) -> bool:
    return name.startswith(("check_", "_check"))


def check_lines(source: str) -> set[int]:
    """Line numbers of argument checks in one module's source."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If) and not node.orelse and _raises_only(node.body):
            lines.update(range(node.lineno, node.end_lineno + 1))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if _is_check_name(getattr(func, "id", getattr(func, "attr", ""))):
                lines.update(range(node.lineno, node.end_lineno + 1))
        elif isinstance(node, ast.FunctionDef) and _is_check_name(node.name):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def code_lines(source: str) -> set[int]:
    """Line numbers that hold code: not blank, not only a comment, not part of a docstring."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    return {
        i
        for i, line in enumerate(source.splitlines(), 1)
        if line.strip() and not line.strip().startswith("#") and i not in docstrings
    }


def sources(rev: str | None) -> dict[str, str]:
    """path -> text of every .py file under lecture_utils/, in the working tree or at a revision."""
    if rev is None:
        return {str(p): p.read_text() for p in sorted(Path("lecture_utils").rglob("*.py"))}
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, "lecture_utils"], check=True, capture_output=True, text=True
    ).stdout.split()
    return {
        n: subprocess.run(["git", "show", f"{rev}:{n}"], check=True, capture_output=True, text=True).stdout
        for n in names
        if n.endswith(".py")
    }


def main() -> None:
    files = sources(sys.argv[1] if len(sys.argv) > 1 else None)
    total = sum(len(s.splitlines()) for s in files.values())
    code = sum(len(code_lines(s)) for s in files.values())
    checks = sum(len(check_lines(s) & code_lines(s)) for s in files.values())
    longest = max(files, key=lambda n: len(files[n].splitlines()))
    print(
        f"{len(files)} modules, {total} lines, {code} code lines, {checks} of them argument checks "
        f"({checks / code:.1%}); longest {longest} ({len(files[longest].splitlines())} lines)"
    )


if __name__ == "__main__":
    main()
