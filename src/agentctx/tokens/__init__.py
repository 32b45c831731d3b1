"""Token counting: a fast estimate, exact offline tokenizers, message and image costs.

* ``EstimateCounter`` estimates without a tokenizer (CJK-aware, calibrated to
  OpenAI's o200k_base or cl100k_base); ``estimate_text_tokens`` is its default,
  and is what the event log records as ``token_estimate`` on every append.
* ``TiktokenCounter`` and ``HFTokenizerCounter`` count exactly, with no network
  (``pip install 'agentctx[tokenizers]'``).
* ``counter_from_spec`` builds any of them from a configuration string.
* ``message_tokens`` / ``messages_tokens`` add OpenAI's chat framing;
  ``image_tokens`` prices images per provider.

Every counter satisfies the ``TokenCounter`` protocol: ``name``, ``count``,
``count_many`` and ``truncate`` (cut to a budget with a visible marker, the
result verified by counting it).
"""

from agentctx.tokens.base import DEFAULT_MARKER, Keep, TokenCounter, truncate_text
from agentctx.tokens.estimate import ESTIMATE_ENCODINGS, EstimateCounter, estimate_text_tokens
from agentctx.tokens.exact import (
    TIKTOKEN_ENCODINGS,
    HFTokenizerCounter,
    TiktokenCounter,
    TokenizerNotInstalled,
)
from agentctx.tokens.images import estimate_image_tokens, image_size_from_data_url, image_tokens
from agentctx.tokens.messages import ImageSize, message_tokens, messages_tokens
from agentctx.tokens.spec import ACCEPTED_SPECS, counter_from_spec

__all__ = [
    "ACCEPTED_SPECS",
    "DEFAULT_MARKER",
    "ESTIMATE_ENCODINGS",
    "TIKTOKEN_ENCODINGS",
    "EstimateCounter",
    "HFTokenizerCounter",
    "ImageSize",
    "Keep",
    "TiktokenCounter",
    "TokenCounter",
    "TokenizerNotInstalled",
    "counter_from_spec",
    "estimate_image_tokens",
    "estimate_text_tokens",
    "image_size_from_data_url",
    "image_tokens",
    "message_tokens",
    "messages_tokens",
    "truncate_text",
]
