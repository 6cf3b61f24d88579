"""What a statement answers: the `Outcome` a handler returns and the session encodes.

`OkOutcome` (affected rows + Doris' info string + warning count), `RowsOutcome` (a typed,
lazily produced result), `TextOutcome` (a small all-text result such as SHOW output),
`PendingOutcome` (an INSERT waiting for its group commit) and `LocalInfileOutcome` (LOAD DATA
LOCAL INFILE, whose file the connection asks the client for).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from executor.insert import InsertOutcome, PendingInsert
from server.local_infile import LocalInfileOutcome
from storage.batch import Batch
from storage.types import DataType


@dataclass
class OkOutcome:
    affected_rows: int = 0
    info: str = ""
    warnings: int = 0  # an INSERT's filtered rows (Doris: setOk(loaded, filtered, info))


@dataclass
class RowsOutcome:
    names: list[str]
    types: list[DataType]
    batches: Iterator[Batch]


@dataclass
class PendingOutcome:
    """An INSERT waiting for its group commit: the session awaits `future` (a LoadResult)
    on the event loop, then answers with `insert_ok`."""

    future: Future[Any]
    filtered: int = 0  # rows the statement filtered before joining (the OK's warnings)


@dataclass
class TextOutcome:
    names: list[str]
    rows: list[tuple[object, ...]] = field(default_factory=list)


Outcome = OkOutcome | RowsOutcome | TextOutcome | PendingOutcome | LocalInfileOutcome


# insert_ok's info string, read back to record the INSERT (dml.recorded_insert)
INSERT_INFO = re.compile(r"^\{'label':'(?P<label>[^']*)', 'status':'VISIBLE', "
                         r"'txnId':'(?P<txn>\d+)'\}$")


def insert_ok(rows: int, label: str, txn_id: int, filtered: int = 0) -> OkOutcome:
    return OkOutcome(rows, f"{{'label':'{label}', 'status':'VISIBLE', 'txnId':'{txn_id}'}}",
                     filtered)


def insert_outcome(outcome: InsertOutcome | PendingInsert) -> OkOutcome | PendingOutcome:
    if isinstance(outcome, PendingInsert):
        return PendingOutcome(outcome.future, outcome.filtered)
    return insert_ok(outcome.rows, outcome.label, outcome.txn_id, outcome.filtered)
