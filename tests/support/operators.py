"""Inputs for executor unit tests: an operator that yields the batches it was given, so an
operator under test (aggregate, sort, ..) can be driven without a scan below it."""

from __future__ import annotations

from collections.abc import Iterator

from executor.operator import Operator
from storage.batch import Batch


class BatchesSource(Operator):
    """Yields `batches` in order, once."""

    def __init__(self, batches: list[Batch]) -> None:
        super().__init__()
        self._batches = batches

    def produce(self) -> Iterator[Batch]:
        yield from self._batches
