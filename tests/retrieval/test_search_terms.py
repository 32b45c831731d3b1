"""Index terms: one analysis for documents and queries, English and CJK."""

# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentctx.retrieval import document_terms, query_terms, stem, stored_event_text, terms


def test_english_words_are_casefolded_stemmed_and_stopwords_dropped() -> None:
    assert document_terms("The Flights were BOOKED before booking") == [
        "flight",
        "book",
        "book",
    ]
    assert query_terms("When did I book the flight?") == ["book", "flight"]


def test_inflections_conflate_but_distinct_words_stay_apart() -> None:
    assert stem("running") == stem("run") == "run"
    assert stem("hopped") == stem("hop")
    assert stem("ponies") == stem("pony")
    assert stem("agreed") == "agree"
    assert stem("feed") == "feed"  # -eed needs a syllable before it
    assert stem("university") != stem("universe")  # no derivational stemming


def test_numbers_and_identifiers_are_kept() -> None:
    assert document_terms("Order 8472 costs 12.50 on gpt4") == [
        "order",
        "8472",
        "cost",
        "12",
        "50",
        "gpt4",
    ]


def test_full_width_and_accented_letters_fold_to_plain_ones() -> None:
    assert document_terms("ＡＢＣ１２３ Café naïve") == ["abc123", "cafe", "naive"]
    assert document_terms("東京タワーがある") == [
        "東京",
        "京タ",
        "タワ",
        "ワー",
        "ーが",
        "があ",
        "ある",
    ]


def test_chinese_runs_become_overlapping_bigrams_and_single_characters_stay() -> None:
    assert document_terms("我想预订去北京的机票，猫。") == [
        "我想",
        "想预",
        "预订",
        "订去",
        "去北",
        "北京",
        "京的",
        "的机",
        "机票",
        "猫",
    ]
    # A word of any length is found through its bigrams, with no dictionary.
    document = set(document_terms("我要预订北京机票"))
    assert set(query_terms("北京机票")) <= document
    assert not set(query_terms("上海机票")) <= document


def test_mixed_script_runs_split_at_the_script_boundary() -> None:
    assert document_terms("iPhone手机很好用") == ["iphone", "手机", "机很", "很好", "好用"]


def test_queries_are_deduplicated_and_bounded() -> None:
    assert query_terms("flight flight FLIGHTS") == ["flight"]
    assert len(query_terms(" ".join(f"word{i}" for i in range(100)))) == 32


def test_event_text_takes_text_json_values_previews_and_tool_name() -> None:
    text = stored_event_text(
        [
            {"kind": "text", "text": "hello"},
            {"kind": "json", "data": {"city": "Paris", "n": 3, "ok": True, "nested": ["deep"]}},
            {"kind": "image", "image_id": "img_x", "blob_id": "b"},
            {"kind": "blob", "preview": "first lines", "blob_id": "c"},
        ],
        {"name": "search_flights", "is_error": False},
        {"tool_name": "search_flights"},
    )
    assert text.split("\n") == ["search_flights", "hello", "Paris", "3", "deep", "first lines"]


_TEXT = st.lists(
    st.sampled_from(
        [
            *"abcXYZ019 _-.,:/\n\tçéßİıÀǅＦｕ２ﬁΩёЖ",
            *"北京大学東京・ー々〇ｱ",
            "flights",
            "booked",
            "the",
            "__init__",
            "北・京",
        ]
    ),
    max_size=120,
).map("".join)


def _whole_text_terms(text: str) -> list[str]:
    """The analysis read in one pass over the whole text: the reference."""
    normalized = unicodedata.normalize("NFKC", text).casefold()
    found: list[str] = []
    for cjk, word in terms.TOKEN_PATTERN.findall(normalized):
        if word:
            term = terms._word_term(word)
            if term:
                found.append(term)
        elif len(cjk) == 1:
            found.append(cjk)
        else:
            found.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
    return found


@settings(max_examples=300, deadline=None)
@given(text=_TEXT, limit=st.integers(min_value=1, max_value=60), piece=st.integers(1, 40))
@example(text="北・京・大学 and booked_flights 東京・" * 4, limit=60, piece=1)
def test_text_read_in_pieces_has_the_terms_of_one_whole_pass(
    text: str, limit: int, piece: int
) -> None:
    """Text is read in pieces cut where no token goes on (a CJK run may hold a
    punctuation mark; words are read by a faster scan where a piece has no CJK
    character): the same terms as one pass over the whole text, cut at the same limit,
    whatever the pieces' length."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(terms, "PIECE_CHARS", piece)
        assert terms._analyze(text, limit) == _whole_text_terms(text)[:limit]
    assert terms._analyze(text, limit) == _whole_text_terms(text)[:limit]
