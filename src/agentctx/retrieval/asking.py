"""How the search index reads a query: which of the session's authors it names (by name
or a learned alias), who it is about, and the text its vector is made from.

A query naming one author ("What does Paola do to relax?") ranks that author's events on
their own and is embedded in their first person ("What do I do to relax?"), since chat
turns are written in the first person; two or more together are asked as "we". The
authors and aliases of each session are kept in memory, and dropped with its data.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentctx.retrieval import lexical as lexical_index
from agentctx.retrieval.aliases import AliasBook
from agentctx.retrieval.config import RetrievalConfig
from agentctx.retrieval.event_rows import session_authors
from agentctx.retrieval.participants import (
    ParticipantCache,
    as_asked_by,
    may_name_someone,
    named_participants,
    named_with_someone_else,
    unnamed_words,
)
from agentctx.retrieval.sync import read_state
from agentctx.storage.database import Database


@dataclass(frozen=True, slots=True)
class Asked:
    """How a search takes its query (:meth:`QueryReader.asked`)."""

    text: str  # what is embedded
    subject: str | None  # the one author it is about
    focus: str | None  # the author whose own events it favours


class QueryReader:
    """Reads queries against the sessions of ``db``, keeping each session's authors and
    aliases in memory (:meth:`drop_user`, :meth:`drop_session` forget them)."""

    def __init__(self, db: Database, config: RetrievalConfig) -> None:
        self.db = db
        self.config = config
        self._participants = ParticipantCache()
        self._aliases = AliasBook()

    def asked(self, user_id: str, session_id: str, query: str) -> Asked:
        """Who ``query`` is about and how it is embedded: as its one named author (or
        several together) would ask it, else as it was asked."""
        named, aliases = self.named(user_id, session_id, query)
        if len(named) == 1 and named_with_someone_else(query, named[0], aliases):
            named = []  # about two people: not this one's own events, nor their voice
        subject = named[0] if len(named) == 1 else None
        if not self.config.participant_weight:
            named = []  # the query is ranked and embedded as it was asked
        focus = subject if named else None
        return Asked(as_asked_by(query, named, aliases), subject, focus)

    def named(self, user_id: str, session_id: str, query: str) -> tuple[list[str], dict[str, str]]:
        """The authors of the session that ``query`` names, and the aliases it names them
        by (:mod:`agentctx.retrieval.aliases`)."""
        if not may_name_someone(query):
            return [], {}
        key = (user_id, session_id)
        aliases: dict[str, str] = {}
        with self.db.read() as conn:
            authors = session_authors(conn, self._participants, key)
            words = unnamed_words(query, authors) if self.config.aliases else []
            state = read_state(conn, user_id, session_id, None) if words else None
            if state is not None and state.sid is not None:
                aliases = dict(
                    self._aliases.aliases(
                        conn,
                        key,
                        words,
                        authors,
                        index=lexical_index.SessionStats(
                            state.sid, state.doc_count, state.term_count
                        ),
                        indexed_seq=state.indexed_seq,
                        max_postings=self.config.max_postings,
                    )
                )
        return named_participants(query, authors, aliases), aliases

    def drop_user(self, user_id: str | None) -> None:
        """Forget the authors and aliases of the user's sessions (every user's when None)."""
        self._participants.drop_user(user_id)
        self._aliases.drop_user(user_id)

    def drop_session(self, user_id: str, session_id: str) -> None:
        """Forget the authors and aliases of one session."""
        self._participants.drop_session((user_id, session_id))
        self._aliases.drop_session((user_id, session_id))
