"""Compaction with no model endpoint: extractive summaries, topic boundaries, keywords.

When no LLM is configured these do every compaction job, worse than a model but
deterministic, fast, never failing on odd text and never reaching the network:

* :func:`extractive_summary`: the most informative sentences of a thread within a
  token budget, merged into the previous summary, with the source of each one;
* :func:`topic_boundaries`: TextTiling-style topic segments of a conversation, each
  with a title and keywords;
* :func:`extract_keywords`: keywords and key phrases of English and Chinese text;
* :func:`split_sentences`: the sentence splitter underneath.
"""

from agentctx.compaction.offline.keywords import Keyword, extract_keywords
from agentctx.compaction.offline.segment import Segment, topic_boundaries
from agentctx.compaction.offline.sentences import Sentence, SourceText, split_sentences
from agentctx.compaction.offline.summarize import (
    ExtractiveSummary,
    SummarySentence,
    extractive_summary,
)

__all__ = [
    "ExtractiveSummary",
    "Keyword",
    "Segment",
    "Sentence",
    "SourceText",
    "SummarySentence",
    "extract_keywords",
    "extractive_summary",
    "split_sentences",
    "topic_boundaries",
]
