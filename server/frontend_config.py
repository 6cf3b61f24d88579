"""Frontend configs: ADMIN SET FRONTEND CONFIG and ADMIN SHOW FRONTEND CONFIG (Doris ConfigBase).

The FE configs a user may read and change at runtime, one registry per storage engine. Each item
has Doris' name, Java type name ("boolean", "long", "String"), mutability, and comment, as
`ADMIN SHOW FRONTEND CONFIG` lists them (sorted by key). Mutable items are changed by
`ADMIN SET FRONTEND CONFIG ("key" = "value")` with ConfigBase.setMutableConfig's checks and
wording; as in Doris the change lasts until restart (conf/shaledb.toml is not rewritten).

`current_time_override` is ours (not in Doris): it pins the server clock (storage/clock.py) for
NOW()/CURDATE() and the dynamic partition scheduler; "" returns to the real clock. The server's
static settings (ports, TLS, ...) are listed read-only so users see what the server runs with.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sql.errors import DorisError
from sql.show.statements import like_match
from storage import clock
from storage.engine import StorageEngine
from storage.per_engine import PerEngine

COLUMNS = ["Key", "Value", "Type", "IsMutable", "MasterOnly", "Comment"]


@dataclass(slots=True)
class ConfigItem:
    key: str
    type: str  # Java simple type name, as Doris prints it
    value: str
    mutable: bool
    comment: str = ""
    master_only: bool = False
    # reads the live value (items owned elsewhere, e.g. the clock); None: `value` is it
    read: Callable[[], str] | None = None
    # applies a new value (already type-checked); raises ValueError with the reason
    apply: Callable[[str], None] | None = None

    def current(self) -> str:
        return self.read() if self.read is not None else self.value


def _check_type(type_name: str, value: str) -> str:
    """The value as Doris' ConfigBase.setConfigField would store it; ValueError as Java's."""
    text = value.strip()
    if type_name == "boolean":
        if text.lower() not in ("true", "false"):
            raise ValueError("type mismatch")
        return text.lower()
    if type_name in ("int", "long", "short"):
        try:
            number = int(text)
        except ValueError:
            raise ValueError(f'For input string: "{text}"') from None
        limit = {"short": 2**15, "int": 2**31, "long": 2**63}[type_name]
        if not -limit <= number < limit:
            raise ValueError(f'For input string: "{text}"')
        return str(number)
    if type_name == "double":
        try:
            return repr(float(text))
        except ValueError:
            raise ValueError(f'For input string: "{text}"') from None
    return text


def _apply_time_override(value: str) -> None:
    clock.set_override(clock.parse_override(value))


@dataclass
class FrontendConfig:
    """The engine's FE config registry. Readers call `get_bool` / `get_int` each time they need
    a value, so a change applies from the next use."""

    items: dict[str, ConfigItem] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _listeners: list[Callable[[str], None]] = field(default_factory=list)

    @classmethod
    def of(cls, engine: StorageEngine) -> FrontendConfig:
        return _REGISTRY(engine)

    @classmethod
    def defaults(cls) -> FrontendConfig:
        cfg = cls()
        for item in (
            ConfigItem("dynamic_partition_enable", "boolean", "true", True,
                       "Whether to enable dynamic partition scheduler.", master_only=True),
            ConfigItem("dynamic_partition_check_interval_seconds", "long", "600", True,
                       "The interval of the dynamic partition scheduler, in seconds.",
                       master_only=True),
            ConfigItem("max_dynamic_partition_num", "int", "500", True,
                       "The max number of partitions a dynamic partition table may create "
                       "at once.", master_only=True),
            ConfigItem("current_time_override", "String", "", True,
                       "ShaleDB: pins the server clock ('yyyy-MM-dd HH:mm:ss') for NOW() and "
                       "the dynamic partition scheduler; empty = the real clock.",
                       read=clock.override_text, apply=_apply_time_override),
        ):
            cfg.items[item.key] = item
        return cfg

    def add_static(self, key: str, type_name: str, value: object, comment: str = "") -> None:
        """A read-only item showing a setting the server started with."""
        text = str(value).lower() if isinstance(value, bool) else str(value)
        with self._lock:
            self.items[key] = ConfigItem(key, type_name, text, False, comment)

    def rows(self, pattern: str | None = None) -> list[tuple[object, ...]]:
        """ADMIN SHOW FRONTEND CONFIG [LIKE pattern] rows, sorted by key."""
        with self._lock:
            items = sorted(self.items.values(), key=lambda i: i.key)
        return [(i.key, i.current(), i.type, str(i.mutable).lower(),
                 str(i.master_only).lower(), i.comment)
                for i in items if pattern is None or like_match(i.key, pattern)]

    def set(self, key: str, value: str) -> None:
        """ADMIN SET FRONTEND CONFIG ("key" = "value"), with ConfigBase.setMutableConfig's
        messages."""
        with self._lock:
            item = self.items.get(key)
            if item is None:
                raise DorisError(f"Config '{key}' does not exist")
            if not item.mutable:
                raise DorisError(f"Config '{key}' is not mutable")
            try:
                text = _check_type(item.type, value)
                if item.apply is not None:
                    item.apply(text)
            except ValueError as e:
                raise DorisError(f"Failed to set config '{key}'. err: {e}") from None
            item.value = text
            listeners = list(self._listeners)
        for listener in listeners:
            listener(key)

    def get(self, key: str) -> str:
        with self._lock:
            return self.items[key].current()

    def get_bool(self, key: str) -> bool:
        return self.get(key) == "true"

    def get_int(self, key: str) -> int:
        return int(self.get(key))

    def on_change(self, listener: Callable[[str], None]) -> None:
        """Call `listener(key)` after each successful SET."""
        with self._lock:
            self._listeners.append(listener)


_REGISTRY: PerEngine[FrontendConfig] = PerEngine(lambda engine: FrontendConfig.defaults())
