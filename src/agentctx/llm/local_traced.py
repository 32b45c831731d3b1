"""One text at a time through a TorchScript trace of the local model's transformer.

A window embeds its query, one short text, on the agent's thread, while the background
worker embeds and indexes events on another. The model's eager forward returns to
Python between its operations and takes the interpreter lock again each time; when the
other thread is running Python at that moment, each of those waits can last its whole
switch interval. Measured on 2 cores with the packaged all-MiniLM-L6-v2: a query took
10-12 ms alone and 28 ms at the median (50 ms at p95) inside ``bench agentstep``; beside
a thread running nothing but Python, a second. The traced forward runs the model's
graph in TorchScript's interpreter, with far fewer returns to Python: 6-7 ms alone,
19 ms at the median inside ``bench agentstep``, and the same vectors.

Only a model made of a transformer, mean pooling and normalization is traced (what
:meth:`TracedEncoder.of` checks); any other, or a trace that fails, keeps the model's
own ``encode``. The trace shares the model's weights (about 26 MB more, for its graph).

PyTorch 2.13 marks ``torch.jit.trace`` deprecated in favour of ``torch.export`` and
``torch.compile``; neither fits here (an exported program runs its operations from
Python again, and compiling needs a C compiler on the user's machine). Should a release
remove it, the trace fails and queries go through ``encode`` as before. Its warnings
(the deprecation, the tracer's notes on the model's Python branches) are silenced while
it traces, once per process as the model loads.
"""

from __future__ import annotations

import importlib
import logging
import warnings
from typing import Any

from agentctx.llm.local_bert import SENTENCE_MODULES, mean_pooling_only

log = logging.getLogger(__name__)


def _features(model: Any, text: str) -> dict[str, Any]:
    """The model's own tokenization of ``text`` (``preprocess`` in sentence-transformers
    6, ``tokenize`` before)."""
    preprocess = getattr(model, "preprocess", None)
    features: dict[str, Any] = (
        preprocess([text]) if preprocess is not None else model.tokenize([text])
    )
    return features


class TracedEncoder:
    """A sentence-transformers model's forward for one text: its own tokenization, the
    traced transformer, the mean of the token vectors, unit length. Thread-safe."""

    def __init__(self, model: Any, traced: Any) -> None:
        self._model = model
        self._traced = traced
        self._torch = importlib.import_module("torch")

    @classmethod
    def of(cls, model: Any) -> TracedEncoder | None:
        """The encoder of ``model`` (a loaded ``SentenceTransformer``), or None when it is
        not a transformer with mean pooling and normalization, or cannot be traced."""
        modules = list(model)
        kinds = tuple(type(m).__name__ for m in modules)
        if kinds != SENTENCE_MODULES or not mean_pooling_only(modules[1].get_config_dict()):
            return None
        torch = importlib.import_module("torch")
        hf_logging: Any = importlib.import_module("transformers.utils.logging")
        verbosity = hf_logging.get_verbosity()
        try:
            features = _features(model, "a sentence to trace the model with")
            # The tracer's notes on the model's Python branches, and transformers' on its
            # configuration, are for the model's authors.
            hf_logging.set_verbosity_error()
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                traced = torch.jit.trace(
                    modules[0].auto_model,
                    (features["input_ids"], features["attention_mask"]),
                    strict=False,
                ).eval()
        except Exception:  # an unusual model: its own encode serves
            log.warning("could not trace the embedding model; it encodes queries", exc_info=True)
            return None
        finally:
            hf_logging.set_verbosity(verbosity)
        return cls(model, traced)

    def embed(self, text: str) -> list[float]:
        """The unit vector of ``text``, as the model's ``encode`` computes it."""
        torch = self._torch
        features = _features(self._model, text)
        ids, mask = features["input_ids"], features["attention_mask"]
        with torch.no_grad():
            out = self._traced(ids, mask)
            tokens = out["last_hidden_state"] if isinstance(out, dict) else out[0]
            weights = mask.unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            vector: list[float] = torch.nn.functional.normalize(mean, dim=1)[0].tolist()
        return vector


__all__ = ["TracedEncoder"]
