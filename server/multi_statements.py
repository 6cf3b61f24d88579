"""Splitting one COM_QUERY into its statements (CLIENT_MULTI_STATEMENTS).

A client that asked for multi-statements gets one result per statement, so the server must
know where each statement's text starts and ends: `;` inside string literals, quoted
identifiers and comments does not end a statement. The SQL tokenizer (sql/parser/dialect.py) is the
authority, since it is what parses each piece afterwards; but it is pure Python and slow on
multi-megabyte INSERT ... VALUES texts, which are nearly always a single statement. A regex
lexer (C speed) therefore decides first whether a second statement can exist at all, and only
then does the tokenizer split.
"""

from __future__ import annotations

import re

from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from sql.parser.dialect import ShaleDoris

# Every construct in which `;` is not a statement end, then `;` itself. MySQL's lexing: quotes
# with backslash escapes and doubled quotes, backquoted identifiers, `--`/`#` line comments and
# block comments (the tokenizer decides the cases this filter gets wrong: it only filters).
_LEXEME = re.compile(
    r"'(?:[^'\\]|\\.|'')*'?"
    r'|"(?:[^"\\]|\\.|"")*"?'
    r"|`(?:[^`]|``)*`?"
    r"|--[^\n]*|#[^\n]*"
    r"|/\*.*?(?:\*/|\Z)"
    r"|;",
    re.DOTALL,
)
_BLANK = re.compile(r"(?:\s+|--[^\n]*|#[^\n]*|/\*.*?(?:\*/|\Z))*", re.DOTALL)


def may_hold_several(sql: str) -> bool:
    """False when `sql` is certainly one statement: no `;` outside literals and comments is
    followed by anything but blanks and comments."""
    if ";" not in sql:
        return False
    for m in _LEXEME.finditer(sql):
        if m.group() == ";":
            rest = _BLANK.match(sql, m.end())
            if rest is not None and rest.end() < len(sql):
                return True
    return False


def split_statements(sql: str) -> list[str]:
    """The statements of one COM_QUERY text, each as its own source text (from its first to its
    last token; comments around it dropped), in order. Empty statements (`;;`) are skipped. A
    text the tokenizer rejects (an unterminated string) stays whole, for the parser's error."""
    if not may_hold_several(sql):
        return [sql]
    try:
        tokens = ShaleDoris().tokenize(sql)
    except TokenError:
        return [sql]
    pieces: list[str] = []
    start: int | None = None
    end = 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if start is not None:
                pieces.append(sql[start: end + 1])
            start = None
            continue
        if start is None:
            start = token.start
        end = token.end
    if start is not None:
        pieces.append(sql[start: end + 1])
    return pieces or [sql]
