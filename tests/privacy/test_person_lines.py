"""The person recognizer scans only the lines of a text that hold a name marker.

Its English pattern has no literal to skip ahead with, so over a long tool output it
runs on the lines holding "name", "call", "dear" … alone. The reference is the pattern
run over the whole text: on generated texts mixing markers, names, line ends, tabs and
characters whose case-folding moves positions ("ß", "İ") or that the pattern takes for
another letter ("ı", "ſ", the Kelvin sign), both must find the same spans.
"""

# ruff: noqa: RUF001, RUF002, RUF003 - letters that look alike are what this test is about

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentctx.privacy.recognizers.names import _ENGLISH, _english_matches

_MARKERS = (
    *("my name is", "His name's", "name:", "named", "naming them", "Call me", "called him"),
    *("signed", "Dear", "dear", "Mr.", "Mr", "Mrs", "Ms", "Dr", "Prof.", "MR.", "NAME:"),
    # Case-folding moves positions after "ß" and "İ"; the pattern takes "ı", "ſ" and
    # the Kelvin sign for "i", "s" and "k".
    *("ßigned", "İ named", "sıgned", "SİGNED", "namıng her", "ſigned", "\u212aai named"),
    *("x = 1", "it", "ﬁle name:", ""),
)
_NAMES = ("Dave", "Dave Smith", "Mary-Jane", "O'Neil", "Monday", "Please", "kai", "")
_SPACES = (" ", "\t", "  ", "\n", "")
_SEPARATORS = ("", " ", "\t", "\n", "\r\n", ": ", ", ", ".\n", "\n\n")


@st.composite
def texts(draw: st.DrawFn) -> str:
    chunks = draw(
        st.lists(
            st.tuples(
                st.sampled_from(_MARKERS),
                st.sampled_from(_SPACES),
                st.sampled_from(_NAMES),
                st.sampled_from(_SEPARATORS),
            ),
            min_size=1,
            max_size=8,
        )
    )
    return "".join("".join(chunk) for chunk in chunks)


def _spans(matches: object) -> list[tuple[int, int, int, int]]:
    return [(*m.span(1), *m.span(2)) for m in matches]  # type: ignore[attr-defined]


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts())
def test_the_lines_scanned_find_what_the_whole_text_holds(text: str) -> None:
    assert _spans(_english_matches(text)) == _spans(_ENGLISH.finditer(text))


def test_a_long_output_with_markers_on_many_lines() -> None:
    lines = []
    for i in range(3000):
        if i % 7 == 0:
            lines.append(f"def name_{i}(self): return self.call(Mr. Smith{i % 3})")
        elif i % 11 == 0:
            lines.append(f"# Dear Dr. Who, signed\tJohn Watson, my name is Kai {i}")
        else:
            lines.append(f"value_{i} = compute({i}, dr={i})")
    text = "\n".join(lines)
    found = _spans(_english_matches(text))
    assert found == _spans(_ENGLISH.finditer(text))
    assert len(found) > 500


def test_a_text_whose_folding_moves_positions_is_scanned_whole() -> None:
    # "ß" folds to "ss": the marker's folded position lies past its line here.
    text = "ß" * 10 + "\nMr. Al said hi\nx"
    assert [m.group(2) for m in _english_matches(text)] == ["Al"]
