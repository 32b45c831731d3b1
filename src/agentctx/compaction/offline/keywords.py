"""Keyword extraction: TF-IDF over candidate words, phrases and CJK n-grams.

Candidates come from the tokens of :mod:`agentctx.retrieval.terms` (the same
normalization, stemming and script handling as the search index):

* English (and any space-separated script): every content word, keyed by its
  index term (``flights``/``flight`` are one keyword), and every run of two or
  three adjacent content words (a phrase such as ``connection pool``) seen at
  least twice. Stopwords, chat filler (``ok``, ``thanks``, ``let's``) and numbers
  are never keywords and break phrases.
* Chinese and Japanese: character n-grams of two to six characters inside a CJK
  run (n-grams of three or more seen at least twice), not starting or ending with
  a function character (``的``, ``了``, ``是``, …) and not a common word
  (``我们``, ``可以``, …). Without a dictionary, word boundaries come from
  repetition: an n-gram that (nearly) always occurs inside a longer candidate is
  dropped in favour of it, so ``数据库连接池`` wins over ``数据库`` when that is how
  it is always written.

A candidate's score is ``(1 + ln tf) * idf`` (longer CJK n-grams get a small
bonus), with ``idf = ln((N+1)/(df+1)) + 1`` over the documents: ``background``
when given (e.g. every segment of a conversation, so a segment's keywords are what
sets it apart), else the texts themselves (or their sentences, for fewer than
three texts). Phrases score by their words and by how often those words occur
together. Selection then skips a CJK candidate that overlaps one already taken
(``据库连接`` after ``数据库连接``). The order is deterministic: by score, then by
text.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentctx.compaction.offline.sentences import split_sentences
from agentctx.errors import InvalidInput
from agentctx.priority import yield_to_foreground
from agentctx.retrieval.terms import STOPWORDS, document_terms

# The index tokenizer itself: CJK runs and words split exactly as the index splits them.
from agentctx.retrieval.terms import TOKEN_PATTERN as _INDEX_TOKEN


@dataclass(frozen=True, slots=True)
class Keyword:
    """A keyword or key phrase as written most often, its relative score and count.

    ``score`` is relative to the best keyword of the same call (which has 1.0).
    """

    text: str
    score: float
    count: int


_FILLER_LIST = """
    also just like get gets got getting let lets ok okay yes yeah yep no nope sure thanks
    thank please hi hello hey great good nice cool fine well really maybe perhaps think
    thought know knew want wanted need needs make made use used using go goes going gone
    went see seen look looks looking right now new one two three first second next last much
    many lot lots thing things something anything everything nothing way still even yet
    though although since via per etc actually basically probably definitely sounds sound
    seems seem say said tell told try tried can could would should might may must shall will
    don doesn didn isn aren wasn weren won wouldn shouldn couldn ll ve re let's i'm i've
    i'll i'd it's that's there's what's here's done do does did able already always never
    sometimes often usually quite pretty rather enough another every lol haha hmm oh ah uh
    um wow awesome perfect alright anyway anyways kind sort bit day today tomorrow yesterday
    time times back around us them hope glad sorry four five six seven eight nine ten
    hundred thousand million half morning evening afternoon night everyone everybody guys folks
    minute minutes second seconds hour hours days weeks months years ms
"""
_FILLER = frozenset(_FILLER_LIST.split())
_EN_STOP = STOPWORDS | _FILLER
# Characters a CJK keyword never starts or ends with (particles, pronouns, copulas).
_ZH_EDGE = frozenset(
    "的了是在和也就都而及与或吗呢吧啊呀哦嗯我你他她它这那个把被让"
    "给从到很还又说着过们一不有没么此其该之所以并且即去来做想用"
)
# A CJK candidate made only of these is a number ("七百", "两三"), not a keyword.
_ZH_NUMERALS = frozenset("零一二三四五六七八九十百千万亿两半几")
_ZH_STOP_LIST = """
    我们 你们 他们 她们 它们 这个 那个 这些 那些 一个 一些 可以 没有 什么 怎么 怎样
    因为 所以 但是 如果 就是 已经 还是 然后 现在 这样 那样 这里 那里 不是 而且 或者
    以及 还有 只是 自己 大家 非常 比较 一下 一点 时候 应该 需要 可能 知道 觉得 看看
    好的 谢谢 不过 其实 当然 的话 问题 进行 通过 使用 今天 明天 昨天 这么 那么 为什么
    怎么样 好吧 对吧 是的 对的
"""
_ZH_STOP = frozenset(_ZH_STOP_LIST.split())
_JOIN = re.compile(r"[ \t]{1,3}|-")
_MAX_WORDS = 3
_MAX_CJK = 6
_SUBSUMED = 0.7


@functools.lru_cache(maxsize=65536)
def _word_key(lowered: str) -> str | None:
    """The index term of a content word, or None for stopwords, filler and numbers."""
    if lowered in _EN_STOP or len(lowered) < 2 or len(lowered) > 32:
        return None
    digits = sum(char.isdigit() for char in lowered)
    if digits * 2 > len(lowered):
        return None
    terms = document_terms(lowered)
    if len(terms) != 1 or terms[0] in _EN_STOP:
        return None
    return terms[0]


def is_content_term(term: str) -> bool:
    """Whether an index term (a stemmed word or a CJK bigram) can be a keyword."""
    match = _INDEX_TOKEN.fullmatch(term)
    if match is not None and match.group(1) is not None:  # a CJK run
        return (
            term[0] not in _ZH_EDGE
            and term[-1] not in _ZH_EDGE
            and term not in _ZH_STOP
            and not all(char in _ZH_NUMERALS for char in term)
        )
    return term not in _EN_STOP and _word_key(term) == term


# Candidate kinds.
_WORD, _PHRASE, _CJK = 0, 1, 2
# (key, surface form, kind); a phrase's key is its words' keys joined by spaces.
_Occurrence = tuple[str, str, int]


def _cjk_grams(run: str) -> Iterable[str]:
    for n in range(2, min(_MAX_CJK, len(run)) + 1):
        for i in range(len(run) - n + 1):
            gram = run[i : i + n]
            if gram[0] in _ZH_EDGE or gram[-1] in _ZH_EDGE or gram in _ZH_STOP:
                continue
            if all(char in _ZH_NUMERALS for char in gram):
                continue
            yield gram


def _occurrences(text: str) -> list[_Occurrence]:
    """Every candidate occurrence in ``text``: words, phrases, CJK n-grams."""
    normalized = unicodedata.normalize("NFKC", text)
    found: list[_Occurrence] = []
    run: list[tuple[str, str, str]] = []  # (key, surface, gap before it)

    def flush() -> None:
        for i in range(len(run) - 1):
            key, surface, _ = run[i]
            for j in range(i + 1, min(i + _MAX_WORDS, len(run))):
                next_key, next_surface, gap = run[j]
                key = key + " " + next_key
                surface = surface + gap + next_surface
                found.append((key, surface, _PHRASE))
        run.clear()

    last = 0
    for count, match in enumerate(_INDEX_TOKEN.finditer(normalized)):
        if count and not count % 1024:
            yield_to_foreground()  # a long tool output, read in the background
        gap = normalized[last : match.start()]
        last = match.end()
        if run and not _JOIN.fullmatch(gap):
            flush()
        cjk, word = match.groups()
        if cjk is not None:
            flush()
            found.extend((gram, gram, _CJK) for gram in _cjk_grams(cjk))
            continue
        key = _word_key(word.casefold())
        if key is None:
            flush()
            continue
        found.append((key, word, _WORD))
        run.append((key, word, gap))
    flush()
    return found


def _documents(texts: Sequence[str]) -> list[str]:
    if len(texts) >= 3:
        return list(texts)
    return [sentence.text for text in texts for sentence in split_sentences(text)] or list(texts)


def _display(forms: Counter[str]) -> str:
    """The most frequent surface form; on a tie the lowercase one, then the first by text."""
    return min(forms.items(), key=lambda item: (-item[1], not item[0].islower(), item[0]))[0]


def _parts(key: str, kind: int) -> Iterable[str]:
    """The keys of the shorter candidates inside a candidate (sub-strings, sub-phrases)."""
    if kind == _CJK:
        for n in range(2, len(key)):
            for i in range(len(key) - n + 1):
                yield key[i : i + n]
    elif kind == _PHRASE:
        members = key.split(" ")
        for n in range(1, len(members)):
            for i in range(len(members) - n + 1):
                yield " ".join(members[i : i + n])


def _overlaps(a: str, b: str) -> bool:
    """Whether two CJK keywords share a character bigram (one is a shifted copy)."""
    grams = {a[i : i + 2] for i in range(len(a) - 1)}
    return any(b[i : i + 2] in grams for i in range(len(b) - 1))


def _tally(text: str) -> Counter[_Occurrence]:
    """How often each candidate occurrence (key, surface form, kind) is in ``text``."""
    yield_to_foreground()  # read for every summary, in the background
    return Counter(_occurrences(text))


def _keys(tally: Counter[_Occurrence]) -> set[str]:
    return {key for key, _, _ in tally}


def _rank(tally: Counter[_Occurrence], doc_keys: Sequence[set[str]], k: int) -> list[Keyword]:
    """The ``k`` best candidates of ``tally``, with document frequencies from ``doc_keys``."""
    tf: Counter[str] = Counter()
    forms: defaultdict[str, Counter[str]] = defaultdict(Counter)
    kinds: dict[str, int] = {}
    for (key, surface, kind), count in tally.items():
        tf[key] += count
        kinds[key] = kind
        if kind != _CJK:
            forms[key][surface] += count
    if not tf or k == 0:
        return []
    df: Counter[str] = Counter()
    for keys in doc_keys:
        df.update(keys & tf.keys())
    n_docs = max(len(doc_keys), 1)

    def idf(key: str) -> float:
        return math.log((n_docs + 1) / (min(df[key], n_docs) + 1)) + 1.0

    scores: dict[str, float] = {}
    for key, count in tf.items():
        kind = kinds[key]
        if kind == _WORD:
            scores[key] = (1.0 + math.log(count)) * idf(key)
        elif kind == _CJK and (len(key) == 2 or count >= 2):
            scores[key] = (1.0 + math.log(count)) * idf(key) * (1.0 + 0.15 * (len(key) - 2))
    for key, count in tf.items():
        if kinds[key] != _PHRASE or count < 2:
            continue
        members = key.split(" ")
        together = count / min(tf[member] for member in members)
        mean = sum(scores[member] for member in members) / len(members)
        scores[key] = mean * (0.5 + together) * (1.0 + 0.1 * (len(members) - 1))

    # A candidate that nearly always occurs inside a longer one gives way to it.
    subsumed: set[str] = set()
    for key in scores:
        for inner in _parts(key, kinds[key]):
            if inner in scores and tf[key] >= _SUBSUMED * tf[inner]:
                subsumed.add(inner)

    def display(key: str) -> str:
        return _display(forms[key]) if key in forms else key

    ranked = sorted(
        (key for key in scores if key not in subsumed),
        key=lambda key: (-scores[key], display(key), key),
    )
    chosen: list[str] = []
    for key in ranked:
        if kinds[key] == _CJK and any(
            kinds[taken] == _CJK and _overlaps(taken, key) and tf[key] <= tf[taken]
            for taken in chosen
        ):
            continue
        chosen.append(key)
        if len(chosen) == k:
            break
    if not chosen:
        return []
    top = scores[chosen[0]]
    return [Keyword(display(key), scores[key] / top, tf[key]) for key in chosen]


def extract_keywords(
    texts: Sequence[str] | str, k: int = 10, *, background: Sequence[str] | None = None
) -> list[Keyword]:
    """The ``k`` best keywords and key phrases of ``texts``, best first.

    ``background``: documents to weigh rarity against (each a string); by default
    the texts themselves. Never raises on odd text (empty, JSON, code, emoji).
    """
    if k < 0:
        raise InvalidInput(f"k must be >= 0, got {k}")
    if isinstance(texts, str):
        texts = [texts]
    if k == 0 or not texts:
        return []
    tallies = [_tally(text) for text in texts]
    total: Counter[_Occurrence] = Counter()
    for tally in tallies:
        total.update(tally)
    if background is None and len(texts) >= 3:
        doc_keys = [_keys(tally) for tally in tallies]  # the texts are the documents
    else:
        documents = list(background) if background is not None else _documents(texts)
        doc_keys = [_keys(_tally(document)) for document in documents]
    return _rank(total, doc_keys, k)


def keywords_of_spans(
    texts: Sequence[str], spans: Sequence[tuple[int, int]], k: int
) -> list[list[Keyword]]:
    """The keywords of each span of ``texts`` (start inclusive, end exclusive).

    With several spans each is weighed against all of them (the spans are the
    documents, as ``background`` would make them), reading every text once.
    """
    if k < 0:
        raise InvalidInput(f"k must be >= 0, got {k}")
    if len(spans) < 2:
        return [extract_keywords(list(texts[start:end]), k) for start, end in spans]
    tallies = [_tally(text) for text in texts]
    totals: list[Counter[_Occurrence]] = []
    for start, end in spans:
        total: Counter[_Occurrence] = Counter()
        for tally in tallies[start:end]:
            total.update(tally)
        totals.append(total)
    doc_keys = [_keys(total) for total in totals]
    return [_rank(total, doc_keys, k) for total in totals]
