"""Result column names: the SELECT item text exactly as the user wrote it.

MySQL (and the clients people point at Doris) label an unaliased select item with its source
text, e.g. `count(*)`, `a  +  1`, `@@version_comment`, `IFNULL(x, 0)`. sqlglot normalises the
AST (IFNULL becomes COALESCE, DATABASE() becomes SCHEMA()), so regenerating SQL would change the
labels. When the statement text is available we re-tokenize it and cut the select list at its
top-level commas; otherwise we fall back to generating SQL from the AST.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.doris import Doris
from sqlglot.tokens import TokenType

_END = {
    TokenType.FROM, TokenType.WHERE, TokenType.GROUP_BY, TokenType.HAVING, TokenType.ORDER_BY,
    TokenType.LIMIT, TokenType.INTO, TokenType.UNION, TokenType.EXCEPT, TokenType.INTERSECT,
    TokenType.SEMICOLON, TokenType.WINDOW, TokenType.QUALIFY, TokenType.FOR,
}
_SKIP_AFTER_SELECT = {TokenType.HINT, TokenType.DISTINCT, TokenType.ALL}
_OPEN = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE}
_CLOSE = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE}


def select_item_texts(sql: str | None, count: int) -> list[str] | None:
    """Source text of each select item of the first SELECT in `sql`, or None when the text
    cannot be matched to `count` items (the caller then generates names from the AST)."""
    if not sql:
        return None
    try:
        tokens = Doris().tokenize(sql)
    except Exception:  # noqa: BLE001 - any tokenizer failure just means "no text available"
        return None
    i = 0
    while i < len(tokens) and tokens[i].token_type is not TokenType.SELECT:
        i += 1
    i += 1
    while i < len(tokens) and tokens[i].token_type in _SKIP_AFTER_SELECT:
        i += 1
    items: list[str] = []
    depth = 0
    start: int | None = None
    end = -1
    while i < len(tokens):
        tok = tokens[i]
        tt = tok.token_type
        if depth == 0 and (tt in _END or tt is TokenType.COMMA):
            if start is None:
                return None
            items.append(sql[start: end + 1])
            start = None
            if tt is not TokenType.COMMA:
                break
            i += 1
            continue
        if tt in _OPEN:
            depth += 1
        elif tt in _CLOSE:
            depth -= 1
        if start is None:
            start = tok.start
        end = tok.end
        i += 1
    else:
        if start is not None:
            items.append(sql[start: end + 1])
    if len(items) != count:
        return None
    return items


def generated_name(node: exp.Expression) -> str:
    """Fallback label: the item regenerated as MySQL-flavoured SQL with lower-case functions."""
    if isinstance(node, exp.Column):
        return node.name
    try:
        return node.sql(dialect="mysql", normalize_functions="lower")
    except Exception:  # noqa: BLE001
        return node.sql()
