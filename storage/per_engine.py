"""One service object per StorageEngine (the rollup jobs, the running load transactions),
created on first use and dropped with its engine: tests and tools open several engines in one
process, so these cannot be module globals."""

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
