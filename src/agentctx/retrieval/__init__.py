"""Retrieval of older events: hybrid lexical (BM25) and dense (embedding) search per session.

:class:`SearchIndex` keeps the index current (``sync``, also as a turn-end job) and
answers ``search``; :func:`document_terms`/:func:`query_terms` are the text analysis
both sides share.
"""

from agentctx.retrieval.config import RetrievalConfig
from agentctx.retrieval.fusion import fuse
from agentctx.retrieval.index import SearchHit, SearchIndex
from agentctx.retrieval.sync import SyncReport
from agentctx.retrieval.terms import document_terms, query_terms, stem
from agentctx.retrieval.text import stored_event_text

__all__ = [
    "RetrievalConfig",
    "SearchHit",
    "SearchIndex",
    "SyncReport",
    "document_terms",
    "fuse",
    "query_terms",
    "stem",
    "stored_event_text",
]
