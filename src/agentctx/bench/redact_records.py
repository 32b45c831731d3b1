"""Bare names in records: how many people's names a redactor takes out of contact records,
and how many companies' names it takes with them.

A tool's record names a person under a bare ``"name"`` as often as under ``"first_name"``;
so do a company's contact record and a product. The redactor decides from the record's
other members and the name's shape (``agentctx.privacy.recognizers.records``). This part
of ``bench redact`` generates, per Faker locale, person records (``name``, ``mail``,
``address``, ``job``) and company contact records (``name``, ``email``, ``phone`` where
the locale has phone numbers), redacts each as JSON text and as a JSON value, and all of
a kind as one CSV table (as a query tool prints rows), and counts the names changed.

The locales come in two groups. *Development* locales are those the name rules were
written against; *held-out* locales were not looked at before their figures were
first taken (with seed 23). A rule added for a held-out failure moves that locale to
the development group: the held-out figure is the one to trust.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from agentctx.errors import MissingExtra
from agentctx.privacy.redactor import Redactor

DEVELOPMENT_LOCALES: tuple[str, ...] = (
    *("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "pt_BR", "nl_NL", "pl_PL"),
    *("sv_SE", "da_DK", "cs_CZ", "fi_FI", "ro_RO", "en_AU", "en_CA", "de_AT", "fr_CH"),
    *("es_MX", "pt_PT", "hu_HU"),
)
HELD_OUT_LOCALES: tuple[str, ...] = (
    *("no_NO", "sk_SK", "hr_HR", "sl_SI", "bg_BG", "el_GR", "tr_TR", "id_ID", "en_IE"),
    *("fr_CA", "es_CL", "de_CH", "nl_BE", "ru_RU"),
)
RECORDS_SEED = 23


class LocaleRecords(BaseModel):
    """One locale's records: names found in person records, kept in company records."""

    locale: str
    group: str  # "development" or "held-out"
    records: int  # of each kind
    persons_found_text: int
    persons_found_json: int
    persons_found_table: int
    companies_redacted_text: int
    companies_redacted_json: int
    companies_redacted_table: int


class RecordGroup(BaseModel):
    """A group's totals (JSON text; the JSON-value figures are per locale)."""

    group: str
    locales: int
    records: int
    persons_found: int
    companies_redacted: int
    persons_found_table: int = 0
    companies_redacted_table: int = 0

    @property
    def person_recall(self) -> float:
        return self.persons_found / self.records if self.records else 0.0

    @property
    def company_loss(self) -> float:
        return self.companies_redacted / self.records if self.records else 0.0


class RecordsScore(BaseModel):
    """Every locale's counts and the two groups' totals."""

    seed: int
    per_locale: list[LocaleRecords]
    groups: list[RecordGroup]


def _changed(redactor: Redactor, record: dict[str, Any]) -> tuple[bool, bool]:
    """Whether the record's name was changed: as JSON text, and as a JSON value."""
    name = record["name"]
    text = redactor.redact_text(json.dumps(record, ensure_ascii=False)).value
    value = redactor.redact_json(record).value
    return f'"name": {json.dumps(name, ensure_ascii=False)}' not in text, value["name"] != name


def _locale(
    redactor: Redactor, locale: str, group: str, *, records: int, seed: int
) -> LocaleRecords:
    try:
        from faker import Faker  # noqa: PLC0415 - optional, bench extra only
    except ImportError as exc:
        raise MissingExtra("bench", "faker") from exc
    fake = Faker(locale)
    fake.seed_instance(seed)
    phone = getattr(fake, "phone_number", None)
    counts = [0, 0, 0, 0]
    people: list[dict[str, Any]] = []
    companies: list[dict[str, Any]] = []
    for i in range(records):
        profile = fake.profile()
        person = {
            "id": i,
            "name": profile["name"],
            "mail": profile["mail"],
            "address": profile["address"],
            "job": profile["job"],
        }
        company: dict[str, Any] = {"id": i, "name": fake.company(), "email": fake.company_email()}
        if phone is not None:
            company["phone"] = phone()
        people.append(person)
        companies.append(company)
        found = _changed(redactor, person)
        lost = _changed(redactor, company)
        for slot, hit in enumerate((*found, *lost)):
            counts[slot] += hit
    return LocaleRecords(
        locale=locale,
        group=group,
        records=records,
        persons_found_text=counts[0],
        persons_found_json=counts[1],
        persons_found_table=_changed_in_table(redactor, people),
        companies_redacted_text=counts[2],
        companies_redacted_json=counts[3],
        companies_redacted_table=_changed_in_table(redactor, companies),
    )


def _changed_in_table(redactor: Redactor, records: list[dict[str, Any]]) -> int:
    """How many names were changed in ``records`` written as one CSV (as a query tool
    prints rows, ``csv.writer``'s defaults: CRLF lines, quotes where needed), an
    address's line breaks as commas."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(records[0]) if records else [])
    writer.writeheader()
    for record in records:
        writer.writerow({k: str(v).replace("\n", ", ") for k, v in record.items()})
    redacted = list(csv.DictReader(io.StringIO(redactor.redact_text(out.getvalue()).value)))
    if len(redacted) != len(records):
        raise ValueError("the redacted CSV lost or gained rows")
    return sum(row["name"] != record["name"] for row, record in zip(redacted, records, strict=True))


def score_records(
    redactor: Redactor,
    records: int = 300,
    seed: int = RECORDS_SEED,
    groups: Sequence[tuple[str, Sequence[str]]] = (
        ("development", DEVELOPMENT_LOCALES),
        ("held-out", HELD_OUT_LOCALES),
    ),
) -> RecordsScore:
    """Count, per locale, the person names found and the company names redacted."""
    per_locale = [
        _locale(redactor, locale, group, records=records, seed=seed)
        for group, locales in groups
        for locale in locales
    ]
    totals = []
    for group, _ in groups:
        rows = [r for r in per_locale if r.group == group]
        totals.append(
            RecordGroup(
                group=group,
                locales=len(rows),
                records=sum(r.records for r in rows),
                persons_found=sum(r.persons_found_text for r in rows),
                companies_redacted=sum(r.companies_redacted_text for r in rows),
                persons_found_table=sum(r.persons_found_table for r in rows),
                companies_redacted_table=sum(r.companies_redacted_table for r in rows),
            )
        )
    return RecordsScore(seed=seed, per_locale=per_locale, groups=totals)
