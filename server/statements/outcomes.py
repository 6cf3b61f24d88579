"""What a statement answers: the `Outcome` a handler returns and the session encodes.

`OkOutcome` (affected rows + Doris' info string + warning count), `RowsOutcome` (a typed,
lazily produced result), `TextOutcome` (a small all-text result such as SHOW output),
`PendingOutcome` (an INSERT waiting for its group commit) and `LocalInfileOutcome` (LOAD DATA
LOCAL INFILE, whose file the connection asks the client for).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from executor.insert import InsertOutcome, PendingInsert
from server.local_infile import LocalInfileOutcome
from storage.batch import Batch
from storage.types import DataType


@dataclass(frozen=True)
class LoadDone:
    """A load a statement committed (INSERT, CTAS, DELETE): Doris' label and transaction."""

    label: str
    txn_id: int

    def info(self) -> str:
        """Doris' OK info string of a load: `{'label':'..', 'status':'VISIBLE', 'txnId':'..'}`."""
        return f"{{'label':'{self.label}', 'status':'VISIBLE', 'txnId':'{self.txn_id}'}}"


@dataclass
class OkOutcome:
    affected_rows: int = 0
    info: str = ""
    warnings: int = 0  # an INSERT's filtered rows (Doris: setOk(loaded, filtered, info))
    load: LoadDone | None = None  # the load the statement committed, if any


@dataclass
class RowsOutcome:
    names: list[str]
    types: list[DataType]
    batches: Iterator[Batch]


@dataclass
class PendingOutcome:
    """An INSERT waiting for its group commit: the session awaits `future` (a LoadResult)
    on the event loop, then answers with `load_ok`."""

    future: Future[Any]
    filtered: int = 0  # rows the statement filtered before joining (the OK's warnings)


@dataclass
class TextOutcome:
    names: list[str]
    rows: list[tuple[object, ...]] = field(default_factory=list)


Outcome = OkOutcome | RowsOutcome | TextOutcome | PendingOutcome | LocalInfileOutcome


def load_ok(rows: int, label: str, txn_id: int, filtered: int = 0) -> OkOutcome:
    """The OK of a committed load: `rows` loaded, `filtered` rows as its warnings (Doris'
    setOk(loaded, filtered, info)) and the label / transaction in the info string."""
    done = LoadDone(label, txn_id)
    return OkOutcome(rows, done.info(), filtered, done)


def load_outcome(outcome: InsertOutcome | PendingInsert) -> OkOutcome | PendingOutcome:
    """What the session answers for an executor's INSERT: its OK, or the wait for its
    group commit (the session then answers `load_ok` with the LoadResult)."""
    if isinstance(outcome, PendingInsert):
        return PendingOutcome(outcome.future, outcome.filtered)
    return load_ok(outcome.rows, outcome.label, outcome.txn_id, outcome.filtered)
