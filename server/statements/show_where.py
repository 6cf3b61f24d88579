"""The `SHOW ... WHERE` evaluator: a tiny interpreter over a row of text columns (=, IN, LIKE,
AND, OR, NOT), used by SHOW VARIABLES / ALTER TABLE ... / EXPORT and CANCEL EXPORT. Doris'
regression tests poll job state with exactly these forms."""

from __future__ import annotations

from typing import Any

from sqlglot import expressions as exp

from server.statements.common import not_supported
from sql.show import statements as show


def eval_where(node: exp.Expr, row: dict[str, Any]) -> bool:
    """Whether `row` (lower-case column name -> value) satisfies the WHERE condition `node`."""
    if isinstance(node, exp.Paren):
        return eval_where(node.this, row)
    if isinstance(node, exp.And):
        return eval_where(node.left, row) and eval_where(node.right, row)
    if isinstance(node, exp.Or):
        return eval_where(node.left, row) or eval_where(node.right, row)
    if isinstance(node, exp.Not):
        return not eval_where(node.this, row)
    if isinstance(node, exp.EQ):
        return str(row.get(node.left.name.lower(), "")).lower() == node.right.name.lower()
    if isinstance(node, exp.In):
        value = str(row.get(node.this.name.lower(), "")).lower()
        return value in {e.name.lower() for e in node.expressions}
    if isinstance(node, exp.Like):
        return show.like_match(str(row.get(node.this.name.lower(), "")), node.expression.name)
    raise not_supported("This SHOW ... WHERE condition")


def filter_rows(names: list[str], rows: list[tuple[object, ...]],
                where: exp.Expression | None) -> list[tuple[object, ...]]:
    """The rows of a SHOW result (columns `names`) that its WHERE clause keeps."""
    if where is None:
        return rows
    return [row for row in rows
            if eval_where(where.this, {n.lower(): v for n, v in zip(names, row)})]
