"""Planted personal data and hard negatives for end-to-end redaction tests.

One value of every kind the default redactor recognizes, written as it appears in real
text (with its label where a label is what makes it personal data), the forms that are
valid as identifiers (call ids, idempotency keys), and values that look like personal
data but are not (versions, order numbers, timestamps, dates, commit hashes, UUIDs,
prices). A test plants them in every field of a write path, then searches what was
stored with :func:`leaks` and :func:`missing_negatives`.

Imported by the library and MCP corpus test (``test_pii_corpus.py``) and by REST ones
(``from privacy.pii_corpus import PLANTS, leaks``: ``tests/`` is on ``sys.path``).
"""

# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import text

from agentctx import ContextEngine


@dataclass(frozen=True)
class Plant:
    """One planted value: ``text`` is how it is written, ``value`` what must not be stored."""

    kind: str
    text: str
    value: str


PLANTS: tuple[Plant, ...] = (
    Plant("EMAIL", "email alice.wong@example.photography", "alice.wong@example.photography"),
    Plant("EMAIL_FILE", "photo alice.wong@example.com.png", "alice.wong@example.com"),
    Plant("EMAIL_NEW_TLD", "mail bo.chen@studio.dev", "bo.chen@studio.dev"),
    Plant("PHONE_CN", "手机 13912345678", "13912345678"),
    Plant("PHONE_FILE", "scan invoice_13812345678.pdf", "13812345678"),
    Plant("PHONE_INTL", "tel +44 20 7946 0958", "+44 20 7946 0958"),
    Plant("PHONE_US", "call +1 415-555-0132", "415-555-0132"),
    Plant("CN_ID", "证件 11010519491231002X", "11010519491231002X"),
    Plant("CN_ID_BAD_CHECK", "身份证号：11010119900307123X", "11010119900307123X"),
    Plant("CREDIT_CARD", "card 4111 1111 1111 1111", "4111 1111 1111 1111"),
    Plant("IBAN", "IBAN DE89 3704 0044 0532 0130 00", "DE89 3704 0044 0532 0130 00"),
    Plant("SSN", "SSN: 078-05-1120", "078-05-1120"),
    Plant("IP", "client 192.168.10.77", "192.168.10.77"),
    Plant("PERSON_ZH", "姓名：张三丰", "张三丰"),
    Plant("PERSON_EN", "Name: Alice Wong", "Alice Wong"),
    Plant("PERSON_CUED", "请联系李四光先生", "李四光"),
    Plant("URL_CREDENTIALS", "dsn postgres://admin:S3cretPw9@db.example.com/app", "S3cretPw9"),
    Plant("SECRET", "api key sk-proj-4fTq9ZxLm2Vb8NcR7sKd1HyW", "sk-proj-4fTq9ZxLm2Vb8NcR7sKd1HyW"),
    Plant("STUDENT_ID", "学号：2021001234", "2021001234"),
    Plant("EMPLOYEE_ID", "工号：E2023887", "E2023887"),
    Plant("DATE_OF_BIRTH", "DOB: 1971-08-13", "1971-08-13"),
    Plant("PERSON_FIELD", '{"first_name": "Marisol", "seat": "12A"}', "Marisol"),
    Plant("PASSPORT_FIELD", '{\\"passport_number\\": \\"K7734921\\"}', "K7734921"),
    Plant(
        "PERSON_RECORD",
        '{"name": "Marisol Quintana", "mail": "mq@example.org"}',
        "Marisol Quintana",
    ),
)
"""Every recognized kind, as written in free text."""

ID_PLANTS: tuple[Plant, ...] = (
    Plant("EMAIL", "alice.wong@example.photography", "alice.wong@example.photography"),
    Plant("PHONE_CN", "13912345678", "13912345678"),
    Plant("CREDIT_CARD", "4111111111111111", "4111111111111111"),
    Plant("IP", "192.168.10.77", "192.168.10.77"),
    Plant("SECRET", "sk-proj-4fTq9ZxLm2Vb8NcR7sKd1HyW", "sk-proj-4fTq9ZxLm2Vb8NcR7sKd1HyW"),
)
"""Kinds that fit in an identifier (letters, digits and ``._:@/+=-``), as written there."""

FILE_NAMES: tuple[str, ...] = (
    "alice.wong@example.com.png",
    "invoice_13812345678.pdf",
    "bo.chen@studio.dev.jpg",
)
"""File names with personal data in them (attachments, screenshots, downloads)."""

NEGATIVES: dict[str, str] = {
    "version": "2.13.0",
    "order": "20240307000123",
    "timestamp": "2024-03-07T12:30:00Z",
    "date": "2024-03-08",
    "commit": "3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345",
    "uuid": "550e8400-e29b-41d4-a716-446655440000",
    "price": "$1,299.00",
}
"""Values that look like personal data and are not: they must be stored unchanged."""


RECORD_VALUES = ("Quintero", "12/04/1983", "Tomas Herrera")
"""The values of the record and of the table in :func:`planted_json` (found by their
field names and column names)."""

TABLE = "id,name,email\n7,Tomas Herrera,th@example.org\n"
"""A query tool's CSV output: its ``name`` column beside an ``email`` one."""


def planted_text(sep: str = "; ") -> str:
    """One text holding every planted value, file name and hard negative."""
    negatives = [
        f"version {NEGATIVES['version']}",
        f"order no. {NEGATIVES['order']}",
        f"at {NEGATIVES['timestamp']}",
        f"on {NEGATIVES['date']}",
        f"commit {NEGATIVES['commit']}",
        f"request {NEGATIVES['uuid']}",
        f"it costs {NEGATIVES['price']}",
    ]
    files = [f"attached {name}" for name in FILE_NAMES]
    return sep.join([*(p.text for p in PLANTS), *files, *negatives])


def planted_json() -> dict[str, Any]:
    """A JSON object with every planted value as a key and as a value (nested too), and
    the hard negatives as values."""
    doc: dict[str, Any] = {p.text: p.text for p in PLANTS}
    doc.update({name: name for name in FILE_NAMES})
    doc["nested"] = {"items": [{p.text: [p.text]} for p in PLANTS[:5]], "note": planted_text()}
    # A record: its field names say what the values are.
    doc["passenger"] = dict(zip(("last_name", "date_of_birth"), RECORD_VALUES, strict=False))
    doc["export"] = TABLE
    doc.update(NEGATIVES)
    return doc


def identifier(prefix: str, index: int = 0) -> str:
    """The ``index``-th identifier of ``prefix``, carrying a planted value:
    ``call0:alice.wong@…``; different indexes give different identifiers."""
    plant = ID_PLANTS[index % len(ID_PLANTS)]
    return f"{prefix}{index}:{plant.text}"


def _forms(value: str) -> set[bytes]:
    # As stored raw in UTF-8, and as JSON escapes it (non-ASCII as \\uXXXX), in case a
    # column holds JSON written with ensure_ascii.
    escaped = json.dumps(value)[1:-1]
    return {value.encode(), escaped.encode()}


def leaks(haystack: str | bytes) -> list[str]:
    """The planted values (and file names' personal parts) found in ``haystack``."""
    data = haystack.encode() if isinstance(haystack, str) else haystack
    values = {p.value for p in (*PLANTS, *ID_PLANTS)} | set(RECORD_VALUES)
    return sorted(v for v in values if any(form in data for form in _forms(v)))


def missing_negatives(haystack: str | bytes) -> list[str]:
    """The hard negatives not found in ``haystack`` (each should be there, unchanged)."""
    data = haystack.encode() if isinstance(haystack, str) else haystack
    return sorted(k for k, v in NEGATIVES.items() if not any(f in data for f in _forms(v)))


@contextmanager
def root_logging(handler: logging.Handler | None = None) -> Iterator[None]:
    """The root logger at DEBUG (and with ``handler``, if given) for the block."""
    root = logging.getLogger()
    level = root.level
    if handler is not None:
        root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        if handler is not None:
            root.removeHandler(handler)
        root.setLevel(level)


class LogLines(logging.Handler):
    """Every record that reaches the root logger, formatted as a handler would write it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
        self.lines.append(repr({k: v for k, v in record.__dict__.items() if k != "msg"}))


def database_text(engine: ContextEngine) -> bytes:
    """Every stored row: the raw files on SQLite, every table's rows as text on PostgreSQL."""
    if engine.db.engine.dialect.name == "sqlite":
        path = Path(str(engine.db.engine.url.database))
        files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
        return b"\n".join(f.read_bytes() for f in files if f.exists())
    with engine.db.read() as conn:
        tables = conn.execute(
            text(
                "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) "
                "FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
                "AND table_schema NOT IN ('pg_catalog', 'information_schema')"
            )
        ).scalars()
        rows: list[str] = []
        for table in list(tables):
            rows.extend(conn.execute(text(f"SELECT t::text FROM {table} t")).scalars())
    return "\n".join(rows).encode()


def files_text(root: Path) -> bytes:
    """Every file under ``root``, concatenated."""
    return b"\n".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())
