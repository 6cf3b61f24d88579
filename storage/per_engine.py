"""One object per StorageEngine for the layers above storage (the server's export jobs, frontend
config and dynamic partition scheduler, the executor's load records) and for AUTO PARTITION
(storage/auto_partition.py): created on first use and dropped with its engine, since tests and
tools open several engines in one process. The engine's own services are fields it creates and
closes (storage/engine.py); new storage services belong there, not here."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from storage.engine import StorageEngine

T = TypeVar("T")


class PerEngine(Generic[T]):
    def __init__(self, factory: Callable[[StorageEngine], T]) -> None:
        self._factory = factory
        self._objects: weakref.WeakKeyDictionary[StorageEngine, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def peek(self, engine: StorageEngine) -> T | None:
        """The engine's object if one was created, else None (never creates one)."""
        with self._lock:
            return self._objects.get(engine)

    def __call__(self, engine: StorageEngine) -> T:
        with self._lock:
            obj = self._objects.get(engine)
            if obj is None:
                obj = self._objects[engine] = self._factory(engine)
            return obj
