"""Typed errors of search providers and page fetching."""

from __future__ import annotations

from agentctx.errors import AgentCtxError


class SearchError(AgentCtxError):
    """A search or fetch failed; nothing the caller stored is affected."""

    code = "search_error"


class SearchRateLimited(SearchError):
    """The provider answered 429 and retries (honouring ``Retry-After``) ran out."""

    code = "search_rate_limited"

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SearchTimeout(SearchError):
    """The provider or page did not answer in time."""

    code = "search_timeout"


class SearchUnavailable(SearchError):
    """The provider could not be reached or answered with a server error."""

    code = "search_unavailable"


class SearchBadResponse(SearchError):
    """The provider answered, but not in its documented format."""

    code = "search_bad_response"


class SearchAuthError(SearchError):
    """The provider refused the API key (401/403)."""

    code = "search_auth_error"


class PageTooLarge(SearchError):
    """A fetched page is larger than the limit and could not be cut (not text)."""

    code = "page_too_large"
