"""SET: MySQL's assignment semantics as Doris applies them. `SET [GLOBAL | SESSION] x = v`
(a bare word is a string, a complex expression is evaluated like a SELECT constant),
`SET NAMES` / `CHARACTER SET` (utf8* and gbk accepted, nothing changes) and
`SET TRANSACTION ...`. The registry of names, defaults and parsers is server/variables.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mysql_mimic.intercept import TRANSACTION_CHARACTERISTICS, expression_to_value, setitem_kind
from mysql_mimic.variables import DEFAULT
from sqlglot import expressions as exp

from executor.query import evaluate_constant
from server.statements.common import not_supported
from server.statements.outcomes import OkOutcome
from sql.errors import DorisError, ErrorCode

if TYPE_CHECKING:
    from server.statements.runner import StatementRunner


def set_statement(runner: StatementRunner, stmt: exp.Set) -> OkOutcome:
    for item in stmt.expressions:
        kind = setitem_kind(item)
        if kind == "VARIABLE":
            _set_variable(runner, item)
        elif kind in ("NAMES", "CHARACTER SET"):
            # Doris (SetNamesVar) accepts only utf8* and gbk and changes nothing: the session
            # stays utf8mb4 and every statement and result is UTF-8 (docs/clients.md).
            charset = item.name.lower()
            if charset != "default" and not charset.startswith("utf8") and charset != "gbk":
                raise DorisError(f"Unknown character set: '{charset}'",
                                 ErrorCode.UNKNOWN_CHARACTER_SET)
        elif kind == "TRANSACTION":
            for c in item.expressions:
                var, value = TRANSACTION_CHARACTERISTICS[c.name.upper()]
                runner.variables.set(var, value)
        else:
            raise not_supported(f"SET {kind}")
    return OkOutcome()


def _set_variable(runner: StatementRunner, item: exp.SetItem) -> None:
    assignment = item.this
    left = assignment.left
    if isinstance(left, exp.SessionParameter):
        scope, name = (left.text("kind") or "SESSION").upper(), left.name
    elif isinstance(left, exp.Parameter):
        raise not_supported("User-defined variables")
    else:
        scope, name = (item.text("kind") or "SESSION").upper(), left.name
    right = assignment.right
    if isinstance(right, (exp.Column, exp.Var)) and not right.args.get("table") and (
        right.name.upper() not in ("ON", "OFF", "TRUE", "FALSE", "DEFAULT")
    ):
        # SET x = some_word (Doris docs: SET group_commit = async_mode): a string
        right = exp.Literal.string(right.name)
    try:
        value = expression_to_value(right)
    except Exception:  # noqa: BLE001 - complex expression: evaluate it like a SELECT constant
        value, vtype = evaluate_constant(right, runner.context())
        value = vtype.to_python(value)
    if isinstance(right, exp.Column) and not isinstance(value, (bool, int, float)) \
            and value is not DEFAULT:
        value = right.name  # SET x = some_word: MySQL treats a bare word as a string
    if scope == "GLOBAL":
        runner.global_vars.set(name, value)
    else:
        runner.variables.set(name, value)
