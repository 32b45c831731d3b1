"""Index terms: one analysis for documents and queries, English and CJK."""

# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

from hypothesis import given, settings
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


_LATIN_TEXT = st.lists(
    st.sampled_from(
        [*"abcXYZ019 _-.,:/\n\tçéßİıÀǅＦｕ２ﬁΩёЖ", "flights", "booked", "the", "__init__"]
    ),
    max_size=120,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=_LATIN_TEXT, limit=st.integers(min_value=1, max_value=60))
def test_text_without_cjk_has_the_terms_of_the_general_scan(text: str, limit: int) -> None:
    """A text without CJK characters is read by a faster scan of its words; one CJK
    character after it sends the same words through the general scan, which must give
    the same terms (and the character itself), cut at the same limit."""
    general = terms._analyze(text + " 北", limit + 1)
    fast = terms._analyze(text, limit)
    assert fast == [term for term in general if term != "北"][:limit]
    if len(fast) < limit:  # every term of the text: the character comes next
        assert general == [*fast, "北"]
