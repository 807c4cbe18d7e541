"""A compile call in a branch the run did not take: what the run is, not a failure.

Fast-generation scripts compile the draft model's forward only ``if is_speculative:``; a run without a
draft model never reaches that call, and nothing went wrong. When compile calls of the same
function that ran show that the run went through the ``if`` of the one branch around this call it
did not enter (a call before it in the function, or in its other branch), its condition was false
(or true, for a call in its ``else``); else the run did not take one of the branches around it, or
did not enter the function, which is all the source shows.
Syntax only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from .sources import parse

Body = list[ast.stmt]


@dataclass(frozen=True)
class _Branch:
    node: ast.If
    body: Body  # the branch the compile call is in: the ``if``'s body or its ``else``

    def holds(self, line: int) -> bool:
        return _holds(self.body, line)


def untaken(source: str, line: int, ran: Iterable[int]) -> str:
    """The branch the compile call on ``line`` is in that the run did not take, in words ("" when the
    call is in no ``if`` of its function); ``ran``: the lines of the file's compile calls that ran."""
    tree = parse(source)
    if tree is None:
        return ""
    branches = _branches(tree.body, line)
    ran = [other for other in ran if other != line]
    taken = 0  # how many of the outer branches a call that ran shows the run entered
    while taken < len(branches) and any(branches[taken].holds(other) for other in ran):
        taken += 1
    if taken == len(branches):
        return ""  # a call beside it in its innermost branch ran: this one's branch was taken
    scope = _scope(tree, line)
    went_through = taken > 0 or any(_holds(scope, other) for other in ran)
    said = [_condition(source, branch) for branch in branches[taken:]]
    branch = branches[taken]
    in_body = branch.body is branch.node.body
    other = branch.node.orelse if in_body else branch.node.body
    went_the_other_way = any(_holds(other, ran_line) for ran_line in ran)
    if not went_the_other_way and (not went_through or len(said) > 1):
        # One of them was not taken, or the function never ran: which, the source does not say.
        return f"under {', '.join(said)}, which this run did not take"
    test = _condition(source, _Branch(branch.node, branch.node.body))
    return f"{test} was false" if in_body else f"{test} was true (the call is in its `else`)"


def _condition(source: str, branch: _Branch) -> str:
    """```if is_speculative:` (line 58)``, ```elif b:` (line 5)``, ``the `else` of `if a:` (line 3)``."""
    test = ast.get_source_segment(source, branch.node.test)
    text = source.splitlines()[branch.node.lineno - 1][branch.node.col_offset :]
    written = f"`{'elif' if text.startswith('elif') else 'if'} {test}:` (line {branch.node.lineno})"
    return written if branch.body is branch.node.body else f"the `else` of {written}"


def _branches(body: Body, line: int) -> list[_Branch]:
    """The ``if`` branches around ``line``, outermost first, inside its innermost function."""
    for statement in body:
        if not _holds([statement], line):
            continue
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return _branches(statement.body, line)  # a branch around the function says nothing of it
        if isinstance(statement, ast.If):
            for branch in (statement.body, statement.orelse):
                if _holds(branch, line):
                    return [_Branch(statement, branch), *_branches(branch, line)]
            return []  # the call is in the condition itself
        for block in _blocks(statement):  # with, for, while, try: the branches inside them
            if _holds(block, line):
                return _branches(block, line)
        return []
    return []


def _blocks(statement: ast.stmt) -> list[Body]:
    """The statement lists a compound statement holds."""
    blocks = [getattr(statement, field, None) for field in ("body", "orelse", "finalbody")]
    blocks += [handler.body for handler in getattr(statement, "handlers", [])]
    blocks += [case.body for case in getattr(statement, "cases", [])]
    return [block for block in blocks if isinstance(block, list) and block]


def _scope(tree: ast.Module, line: int) -> Body:
    """The body of the innermost function around ``line`` (the module's, at module level)."""
    functions = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _holds(node.body, line)
    ]
    return max(functions, key=lambda node: node.lineno).body if functions else tree.body


def _holds(body: Body, line: int) -> bool:
    """Whether the statements ``body`` span ``line``."""
    return bool(body) and body[0].lineno <= line <= (body[-1].end_lineno or body[-1].lineno)
