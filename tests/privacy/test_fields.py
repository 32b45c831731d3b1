"""Personal data in the named fields of records (JSON in a tool's text output and JSON
values), and birth dates labelled in prose: found, and left alone where the field or the
date says nothing about a person."""

# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentctx import ContextEngine
from agentctx.privacy.config import RedactionConfig
from agentctx.privacy.pii import PIIRedactor
from agentctx.privacy.recognizers import fields, records

REDACTOR = PIIRedactor.from_config()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"first_name": "Sophia", "last_name": "Garcia", "dob": "1971-08-13"}',
            '{"first_name": "[PERSON]", "last_name": "[PERSON]", "dob": "[DATE_OF_BIRTH]"}',
        ),
        (  # a record inside a JSON string: its quotes escaped
            '{\\"firstName\\": \\"Mia\\", \\"dateOfBirth\\": \\"May 3, 1990\\"}',
            '{\\"firstName\\": \\"[PERSON]\\", \\"dateOfBirth\\": \\"[DATE_OF_BIRTH]\\"}',
        ),
        (
            '{"Passport-Number": "X1234567", "mobile": "+1 (415) 555-0134"}',
            '{"Passport-Number": "[NATIONAL_ID]", "mobile": "[PHONE]"}',
        ),
        ('"surname" : "O\'Brien-Smith"', '"surname" : "[PERSON]"'),
        (  # a dict as a log line shows it
            "{'last_name': 'Quintero', 'passport_number': 'K7734921'}",
            "{'last_name': '[PERSON]', 'passport_number': '[NATIONAL_ID]'}",
        ),
        (  # json.dumps' default escapes, in a record inside a JSON string
            json.dumps(json.dumps({"first_name": "José"})),
            json.dumps(json.dumps({"first_name": "[PERSON]"})),
        ),
        ('"passenger_name": "José Álvarez"', '"passenger_name": "[PERSON]"'),
        ("DOB: 1971-08-13", "DOB: [DATE_OF_BIRTH]"),
        (
            "date of birth 13/08/1971, flying tomorrow",
            "date of birth [DATE_OF_BIRTH], flying tomorrow",
        ),
        ("I was born on 13 August 1971 in Porto", "I was born on [DATE_OF_BIRTH] in Porto"),
        ("Her birthday is Aug. 3rd, 1985.", "Her birthday is [DATE_OF_BIRTH]."),
        ("出生日期：1971年8月13日", "出生日期：[DATE_OF_BIRTH]"),
    ],
)
def test_personal_fields_and_labelled_birth_dates_are_redacted(text: str, expected: str) -> None:
    assert REDACTOR.redact_text(text).value == expected


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "Economy", "city": "Paris", "departure_date": "2024-05-15"}',  # no one's
        '{"name": "get_reservation_details", "arguments": {"user_id": "mia_li_3668"}}',
        '{"first_name": "unknown", "last_name": "n/a", "dob": null}',
        '{"first_name": "12345", "dob": "tomorrow", "phone": "12", "passport": "none"}',
        '{"phone_model": "Pixel 8", "birth_rate": "1.6", "date": "2024-05-15"}',
        "The flight on 2024-05-15 leaves at 09:40.",
        "She was born in 1990 and the newborn on 2024-05-01 is fine.",
        "Your order #4411 was placed on 13/08/2024.",
    ],
)
def test_fields_and_dates_that_name_no_one_are_left_alone(text: str) -> None:
    assert REDACTOR.redact_text(text).value == text


def test_the_members_of_json_values_are_read_by_their_field_names() -> None:
    record = {
        "reservation_id": "ZFA04Y",
        "passengers": [
            {"first_name": "Sophia", "last_name": "Garcia", "dob": "1971-08-13", "seat": "12A"},
            {"first_name": "Kai", "last_name": "Lee", "dob": "unknown", "seat": "12B"},
        ],
        "name": "Economy",
        "contact": {"phone_number": "555 0134 111", "email": "sophia.garcia@example.com"},
    }
    redacted = REDACTOR.redact_json(record)
    assert redacted.value == {
        "reservation_id": "ZFA04Y",
        "passengers": [
            {
                "first_name": "[PERSON]",
                "last_name": "[PERSON]",
                "dob": "[DATE_OF_BIRTH]",
                "seat": "12A",
            },
            {"first_name": "[PERSON]", "last_name": "[PERSON]", "dob": "unknown", "seat": "12B"},
        ],
        "name": "Economy",
        "contact": {"phone_number": "[PHONE]", "email": "[EMAIL]"},
    }
    assert redacted.entity_types >= {"PERSON", "DATE_OF_BIRTH", "PHONE", "EMAIL"}
    assert record["passengers"][0]["first_name"] == "Sophia"  # the input is not changed


def test_names_off_keeps_name_fields_and_an_allow_list_keeps_its_values() -> None:
    record = '{"first_name": "Sophia", "dob": "1971-08-13"}'
    no_names = PIIRedactor.from_config(RedactionConfig(names=False))
    assert (
        no_names.redact_text(record).value == '{"first_name": "Sophia", "dob": "[DATE_OF_BIRTH]"}'
    )
    assert no_names.redact_json({"first_name": "Sophia"}).value == {"first_name": "Sophia"}
    allowing = REDACTOR.with_allow_list(["Sophia"])
    assert allowing.redact_json({"first_name": "Sophia", "last_name": "Garcia"}).value == {
        "first_name": "Sophia",
        "last_name": "[PERSON]",
    }
    assert (
        allowing.redact_text(record).value == '{"first_name": "Sophia", "dob": "[DATE_OF_BIRTH]"}'
    )


def test_a_support_agents_tool_output_reaches_storage_without_the_customers_record(
    tmp_path: Path,
) -> None:
    """The airline agent's reservation lookup: a tool result of JSON text and a tool call
    with JSON arguments. The database file holds neither the passengers' names and birth
    dates nor the passport, while the flight's date and the reservation stay readable."""
    result = json.dumps(
        {
            "reservation_id": "ZFA04Y",
            "flights": [{"flight_number": "HAT194", "date": "2024-05-15"}],
            "passengers": [{"first_name": "Sophia", "last_name": "Garcia", "dob": "1971-08-13"}],
        }
    )
    url = f"sqlite:///{tmp_path / 'agentctx.db'}"
    with ContextEngine(url=url, home=tmp_path / "home", jobs="manual") as engine:
        session = engine.create_session(user_id="u1", agent_id="airline")
        with session.turn() as turn:
            turn.add_message("user", "Please add my passport to reservation ZFA04Y")
            call = turn.add_tool_call(
                "update_passengers",
                {"reservation_id": "ZFA04Y", "passport": "X1234567", "first_name": "Sophia"},
            )
            stored = turn.add_tool_result(call.call_id, content=result)
        assert '"dob": "[DATE_OF_BIRTH]"' in stored.text
        assert '"date": "2024-05-15"' in stored.text and "ZFA04Y" in stored.text
        arguments = session.events()[1].parts[0]
        assert arguments.data == {
            "reservation_id": "ZFA04Y",
            "passport": "[NATIONAL_ID]",
            "first_name": "[PERSON]",
        }
        window = session.build_context(query="passport", budget=2000)
        assert "HAT194" in json.dumps(window.messages)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("agentctx.db*"))
    for value in ("Sophia", "Garcia", "1971-08-13", "X1234567"):
        assert value.encode() not in raw, value
    with sqlite3.connect(tmp_path / "agentctx.db") as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 3


@settings(max_examples=2000, deadline=None)
@given(st.text(st.sampled_from(list(" \t:\"'ab\n")), max_size=12))
def test_the_member_gate_says_yes_wherever_a_quote_comes_before_a_colon(text: str) -> None:
    """The cheap test that lets the member pattern run is exact: a quote, then spaces or
    tabs, then a colon (what the pattern needs between a key and its value)."""
    assert fields._member_possible(text) == (re.search(r"[\"'][ \t]*:", text) is not None)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (  # a CRM lookup: the name beside the customer's email and phone
            '{"id": 7, "name": "Maria Lopez", "email": "maria.lopez@example.com", "tier": "gold"}',
            '{"id": 7, "name": "[PERSON]", "email": "[EMAIL]", "tier": "gold"}',
        ),
        (  # the personal detail after the name, a particle, a form of address
            '{"name": "Mrs. Simon van Dillen", "note": "x", "phone": "+31 20 555 0134"}',
            '{"name": "[PERSON]", "note": "x", "phone": "[PHONE]"}',
        ),
        (  # as a log line shows a dict, and inside a JSON string
            "{'display_name': 'Dr. José Álvarez Jr.', 'dob': '1971-08-13'}",
            "{'display_name': '[PERSON]', 'dob': '[DATE_OF_BIRTH]'}",
        ),
        (
            json.dumps(json.dumps({"name": "Chloë Brink", "address": "12 Rue Oberkampf"})),
            json.dumps(json.dumps({"name": "[PERSON]", "address": "12 Rue Oberkampf"})),
        ),
        (  # Chinese: a field that names a person, and a bare name beside a detail
            '{"姓名": "张伟", "手机号": "138 0013 8000", "出生日期": "1990-01-02"}',
            '{"姓名": "[PERSON]", "手机号": "[PHONE]", "出生日期": "[DATE_OF_BIRTH]"}',
        ),
        (
            '{"名字": "欧阳娜娜", "邮箱": "nana@example.com"}',
            '{"名字": "[PERSON]", "邮箱": "[EMAIL]"}',
        ),
        (  # as json.dumps writes Chinese by default: keys and values escaped
            json.dumps({"姓名": "张伟", "备注": "x"}),
            json.dumps({"姓名": "[PERSON]", "备注": "x"}),
        ),
        (
            json.dumps({"名字": "李娜", "住址": "x"}),
            json.dumps({"名字": "[PERSON]", "住址": "x"}),
        ),
        (  # a list of records: each one judged by its own members
            '[{"name": "Ana Silva", "mail": "ana@example.com"}, {"name": "Blue Widget", "sku": 3}]',
            '[{"name": "[PERSON]", "mail": "[EMAIL]"}, {"name": "Blue Widget", "sku": 3}]',
        ),
    ],
)
def test_a_bare_name_is_a_persons_in_a_record_holding_a_personal_detail(
    record: str, expected: str
) -> None:
    assert REDACTOR.redact_text(record).value == expected
    try:
        as_json = json.loads(record)
    except ValueError:
        return  # a dict's repr: text only
    if isinstance(as_json, dict | list):  # the same record as a JSON value
        assert REDACTOR.redact_json(as_json).value == json.loads(expected)


@pytest.mark.parametrize(
    "record",
    [
        # no personal detail among the record's own members
        '{"name": "Maria Lopez", "role": "author", "books": 12}',
        # the detail is a nested object's, whose own name is the person's
        '{"name": "Blue Widget", "seller": {"name": "Kai Lee", "email": "kai@example.com"}}',
        # a company's contact record: its legal form or what it is
        '{"name": "Acme Widgets Inc.", "email": "sales@acme.example", "phone": "+1 415 555 0132"}',
        '{"name": "Karlsson Lindberg AB", "email": "info@kl.example"}',
        '{"name": "Northwind Support Team", "email": "help@northwind.example"}',
        # not a full name: one word, lowercase, a tool's name, digits
        '{"name": "Maria", "email": "maria@example.com"}',
        '{"name": "admin user", "email": "root@example.com"}',
        '{"name": "get_user_details", "email": "x@example.com"}',
        '{"name": "Room 101", "phone": "+1 415 555 0132"}',
        '{"名称": "黄山风景区", "电话": "0559-5561111"}',
    ],
)
def test_a_bare_name_is_kept_where_the_record_is_no_persons(record: str) -> None:
    key, name = next(iter(json.loads(record).items()))
    assert f'"{key}": "{name}"' in REDACTOR.redact_text(record).value
    assert REDACTOR.redact_json(json.loads(record)).value[key] == name


def test_a_bare_name_follows_names_off_and_the_allow_list() -> None:
    record = {"name": "Maria Lopez", "email": "maria.lopez@example.com"}
    no_names = PIIRedactor.from_config(RedactionConfig(names=False))
    assert no_names.redact_json(record).value == {"name": "Maria Lopez", "email": "[EMAIL]"}
    assert '"name": "Maria Lopez"' in no_names.redact_text(json.dumps(record)).value
    allowing = REDACTOR.with_allow_list(["Maria Lopez"])
    assert allowing.redact_json(record).value["name"] == "Maria Lopez"
    assert '"name": "Maria Lopez"' in allowing.redact_text(json.dumps(record)).value


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["id", "email", "note", "tags", "name"]), max_size=5),
    st.lists(st.sampled_from(["{", "}", "[", "]", '"k": 1, ']), max_size=6),
)
def test_a_records_keys_in_text_are_its_own_members(keys: list[str], noise: list[str]) -> None:
    """Whatever precedes and follows a record (other records, lists, stray brackets), the
    keys read around a member are exactly the record's own, not a nested object's."""
    members = ", ".join(
        f'"{key}": {{"inner": 1}}' if key == "tags" else f'"{key}": 1' for key in keys
    )
    prefix = "".join(noise)
    text = f'{prefix}{{"name": "X", {members}}}, "after": 2}}'
    at = text.index('"name"') + 1
    assert records.record_keys(text, at) == ["name", *keys]


def _styles(key: str) -> list[str]:
    """``key`` as records write it: snake_case, camelCase, Title-Case, UPPER."""
    words = key.split()
    return [
        "_".join(words),
        words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:]),
        "-".join(w[:1].upper() + w[1:] for w in words),
        "_".join(words).upper(),
    ]


@pytest.mark.parametrize("key", fields._PERSONAL_KEYS)
def test_every_personal_key_in_every_style_makes_a_bare_name_a_persons(key: str) -> None:
    """The gate that skips records without a personal key (a word of each key, looked
    for in the text) never skips one that has such a key."""
    assert any(word in key.split() or word in key for word in fields._PERSONAL_WORDS)
    for styled in _styles(key):
        record = {"name": "Maria Lopez", styled: "kept apart"}
        assert '"name": "[PERSON]"' in REDACTOR.redact_text(json.dumps(record)).value, styled
        assert REDACTOR.redact_json(record).value["name"] == "[PERSON]", styled


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (  # CSV as a query tool prints it: quoted cells, a surname first
            'id,name,email,dob\n1,Maria Lopez,maria@example.com,1971-08-13\n2,"Lee, Kai",k@x.io,'
            "1990-01-02\n(2 rows)",
            'id,name,email,dob\n1,[PERSON],[EMAIL],[DATE_OF_BIRTH]\n2,"[PERSON]",[EMAIL],'
            "[DATE_OF_BIRTH]\n(2 rows)",
        ),
        (  # Markdown, with its rule line, and columns named as record fields
            "| id | first_name | last_name | phone |\n|---|:---|---|---|\n"
            "| 1 | Maria | Lopez | 415 555 0132 |\n\nTotal: 1",
            "| id | first_name | last_name | phone |\n|---|:---|---|---|\n"
            "| 1 | [PERSON] | [PERSON] | [PHONE] |\n\nTotal: 1",
        ),
        (  # TSV with an empty cell, and semicolons
            "name\temail\tnote\nMaria Lopez\t\tvip\n",
            "name\temail\tnote\n[PERSON]\t\tvip\n",
        ),
        ("姓名;手机\n张伟;13800138000\n", "姓名;手机\n[PERSON];[PHONE]\n"),
        (  # csv.writer's own line ends
            "id,name,email\r\n1,Maria Lopez,maria@example.com\r\n",
            "id,name,email\r\n1,[PERSON],[EMAIL]\r\n",
        ),
        (  # a table an assistant wrote, its header in bold
            "| **Name** | **Email** |\n|---|---|\n| Maria Lopez | maria@example.com |",
            "| **Name** | **Email** |\n|---|---|\n| [PERSON] | [EMAIL] |",
        ),
    ],
)
def test_the_columns_of_a_table_are_read_as_a_records_fields(table: str, expected: str) -> None:
    assert REDACTOR.redact_text(table).value == expected
    assert REDACTOR.redact_json({"output": table}).value == {"output": expected}


@pytest.mark.parametrize(
    "table",
    [
        "name,price,stock\nBlue Widget,3.50,12\nRed Gadget,4.00,0\n",  # no personal column
        "name,email\nsupport team,help@x.io\nAcme Widgets Inc.,sales@x.io\n",  # no person's
        # code, not a table: the "header" and the lines after it differ in width
        "def parse(x, name, y):\n    return x, y\n",
        "date,amount\n2024-05-15,12.00\n",  # a date column that is no birth date
        # prose with commas is no CSV, though its lines have as many commas as a header
        "1. Details: First name, last name, and date of birth for Ivan.\n"
        "2. Payment: which method (credit card, gift card, or certificate).\n",
        "First name, last name, and date of birth for Ivan.\n"
        "Then the payment (credit card, gift card, or certificate).\n",
    ],
)
def test_tables_without_a_persons_column_are_left_alone(table: str) -> None:
    redacted = REDACTOR.redact_text(table)
    assert not {"PERSON", "DATE_OF_BIRTH"} & redacted.entity_types, redacted.value
    assert redacted.value.splitlines()[1].split(",")[0] == table.splitlines()[1].split(",")[0]


def test_a_table_inside_a_string_is_read_with_its_escaped_line_breaks() -> None:
    """A query tool's CSV as a JSON result holds it (escaped once, or twice inside
    another JSON string), and as a log line shows a dict (a repr): read all the same,
    every other character kept."""
    csv = 'id,name,email\n7,Tomas Herrera,th@example.org\n8,"Lee, Kai",k@x.io\n'
    clean = 'id,name,email\n7,[PERSON],[EMAIL]\n8,"[PERSON]",[EMAIL]\n'
    once = json.dumps({"output": csv})
    assert REDACTOR.redact_text(once).value == json.dumps({"output": clean})
    twice = json.dumps(json.dumps({"output": csv}))
    assert REDACTOR.redact_text(twice).value == json.dumps(json.dumps({"output": clean}))
    shown = repr({"note": "O'Brien's export", "export": csv})
    assert REDACTOR.redact_text(shown).value == repr({"note": "O'Brien's export", "export": clean})


_TABLE_PIECES = [
    *("name", "email", "first_name", "dob", "姓名", "手机", "Maria Lopez", "Lopez, Maria"),
    *('"', "'", "\\", "\\n", '\\"', "\n", "\r\n", ",", "\t", "|", ";", "{", "}", "[", "]"),
    *(":", " ", "a@b.co", "1971-08-13", "|---|", "**Name**", "Dr.", '"name": "', "\\u59d3"),
]


def test_a_header_over_a_lone_pipe_is_no_table() -> None:
    """A Markdown header over a line that is a pipe and a space once raised inside the
    redactor: every write holding such a text would have failed."""
    for text in ("| name | email |\n| \n", "name|email\n |\n", "|name|email|\n  |  \n"):
        assert REDACTOR.redact_text(text).value == text


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_TABLE_PIECES), max_size=40))
def test_redaction_never_fails_on_texts_made_of_records_and_tables(pieces: list[str]) -> None:
    """Whatever the mix of keys, quotes, escapes, delimiters and line ends, the redactor
    answers (a text of the same kind) and never raises: an append must not fail on the
    shape of a tool's output."""
    text = "".join(pieces)
    assert isinstance(REDACTOR.redact_text(text).value, str)
    record = {"name": text, "email": "ana@example.com", "nested": {text: [text]}}
    value = REDACTOR.redact_json(record).value
    assert isinstance(value, dict) and value["email"] == "[EMAIL]"
