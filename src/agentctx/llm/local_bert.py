"""A BERT sentence model run with PyTorch alone: the packaged model without importing
sentence-transformers or transformers.

The engine loads its embedding model on a background thread while the agent's windows
are built. Loaded through sentence-transformers, the load was mostly imports
(sentence-transformers brings transformers, scikit-learn and SciPy): 4.7 s alone on 2
cores, about 10 s beside an agent loop, all of it Python that holds the interpreter lock
and slows every window built meanwhile (a third of ``bench agentstep``'s windows, p95
61 ms against 47 after the load). A model folder that is a plain BERT encoder with mean
pooling and normalization (all-MiniLM-L6-v2, and the many models of that shape) is run
here instead: PyTorch, the ``tokenizers`` library and the ``safetensors`` weights, about
1 s to load. Its vectors are the model's own (within 2e-7 of sentence-transformers'
``encode``, which the tests check). Any other folder is loaded by sentence-transformers.

The forward runs as a TorchScript trace made once at load (the interpreter lock is free
for the whole forward, where the eager one takes it back between operations); a trace
that does not reproduce the eager forward on a padded batch is not used.

Precision (``precision="auto"``, the default): on a CPU with AMX, whose tiles multiply
bfloat16, the forward runs in bfloat16 once it agrees with the float32 one on a check
batch (every vector's cosine to its float32 twin at least :data:`BF16_AGREEMENT`). On a
2-core Xeon with AMX a query took 8.6 ms instead of 11.7 and the ten development chats
embedded in 23 s instead of 67; the vectors' cosine to float32's was 0.9997 at least,
and the ten nearest turns of each of the chats' 728 questions were 99.0% the same (the
nearest 99.2%). AVX512-BF16 alone is not enough: on a 2-core Xeon with it and no AMX,
bfloat16 was the slower one (a query 21.6-24.1 ms against 16.0-17.9, a 2 KB document
96-100 ms against 71-80). Timing both at load was tried and is not done: under load
the timing chose wrongly, and a model loaded again could compute in the other
precision. Elsewhere, or with ``precision="float32"``, it runs in float32.
"""

from __future__ import annotations

import importlib
import json
import logging
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

Precision = Literal["auto", "float32"]

BF16_AGREEMENT = 0.999
"""The least cosine a bfloat16 vector of the check batch may have to its float32 twin
for the model to run in bfloat16."""

SENTENCE_MODULES = ("Transformer", "Pooling", "Normalize")
"""The modules, in order, of a sentence model that only averages and normalizes."""
_TRACE_TOLERANCE = 1e-5


def mean_pooling_only(config: dict[str, Any]) -> bool:
    """Whether a sentence-transformers ``Pooling`` configuration averages the tokens, and
    only that (the configuration's names differ between releases)."""
    if "pooling_mode" in config:
        return bool(config["pooling_mode"] == "mean")
    modes = {k: v for k, v in config.items() if k.startswith("pooling_mode_")}
    only_mean = sum(bool(v) for v in modes.values()) == 1
    return modes.get("pooling_mode_mean_tokens") is True and only_mean


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _plain_bert(folder: Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the BERT configuration, the sentence configuration) of a folder holding a BERT
    encoder, mean pooling and normalization, with a fast tokenizer and safetensors
    weights; None for any other folder."""
    modules = _read_json(folder / "modules.json")
    if not isinstance(modules, list) or len(modules) != len(SENTENCE_MODULES):
        return None
    for module, kind in zip(modules, SENTENCE_MODULES, strict=True):
        if not isinstance(module, dict) or not str(module.get("type", "")).endswith(f".{kind}"):
            return None
    if modules[0].get("path", "") != "":
        return None
    pooling = _read_json(folder / str(modules[1].get("path", "")) / "config.json")
    if not isinstance(pooling, dict) or not mean_pooling_only(pooling):
        return None
    config = _read_json(folder / "config.json")
    sentence = _read_json(folder / "sentence_bert_config.json")
    if not isinstance(config, dict) or not isinstance(sentence, dict):
        return None
    plain = (
        config.get("model_type") == "bert"
        and config.get("hidden_act") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and not config.get("is_decoder", False)
        and isinstance(sentence.get("max_seq_length"), int)
        and (folder / "tokenizer.json").is_file()
        and (folder / "model.safetensors").is_file()
    )
    return (config, sentence) if plain else None


def _weights(folder: Path, layers: int) -> dict[str, Any] | None:
    """The encoder's tensors by their names without the ``bert.`` prefix some folders
    use; None when one is missing."""
    load_file = importlib.import_module("safetensors.torch").load_file
    stored: dict[str, Any] = load_file(str(folder / "model.safetensors"), device="cpu")
    weights = {name.removeprefix("bert."): tensor for name, tensor in stored.items()}
    needed = ["embeddings.word_embeddings", "embeddings.position_embeddings"]
    needed += ["embeddings.token_type_embeddings"]
    for i in range(layers):
        layer = f"encoder.layer.{i}."
        needed += [
            layer + "attention.self.query",
            layer + "attention.self.key",
            layer + "attention.self.value",
            layer + "attention.output.dense",
            layer + "intermediate.dense",
            layer + "output.dense",
        ]
    if any(f"{name}.weight" not in weights for name in needed):
        return None
    return weights


def _encoder_module(weights: dict[str, Any], config: dict[str, Any]) -> Any:
    """A ``torch.nn.Module``: (token ids, attention mask) to unit sentence vectors."""
    torch = importlib.import_module("torch")
    functional = torch.nn.functional
    layers = int(config["num_hidden_layers"])
    heads = int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))

    class BertSentenceEncoder(torch.nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            # Module attribute names may not hold dots.
            self.tensors = torch.nn.ParameterDict(
                {
                    name.replace(".", "__"): torch.nn.Parameter(tensor, requires_grad=False)
                    for name, tensor in weights.items()
                    if tensor.is_floating_point()
                }
            )

        def _t(self, name: str) -> Any:
            return self.tensors[name.replace(".", "__")]

        def _linear(self, x: Any, name: str) -> Any:
            return functional.linear(x, self._t(f"{name}.weight"), self._t(f"{name}.bias"))

        def _norm(self, x: Any, name: str) -> Any:
            return functional.layer_norm(
                x, (x.shape[-1],), self._t(f"{name}.weight"), self._t(f"{name}.bias"), eps
            )

        def forward(self, ids: Any, mask: Any) -> Any:
            n, length = ids.shape
            positions = torch.arange(length).unsqueeze(0)
            x = (
                self._t("embeddings.word_embeddings.weight")[ids]
                + self._t("embeddings.position_embeddings.weight")[positions]
                + self._t("embeddings.token_type_embeddings.weight")[0]
            )
            x = self._norm(x, "embeddings.LayerNorm")
            width = x.shape[-1]
            attend = mask.bool()[:, None, None, :]
            for i in range(layers):
                layer = f"encoder.layer.{i}."
                q, k, v = (
                    self._linear(x, layer + f"attention.self.{part}")
                    .view(n, length, heads, width // heads)
                    .transpose(1, 2)
                    for part in ("query", "key", "value")
                )
                context = functional.scaled_dot_product_attention(q, k, v, attn_mask=attend)
                context = context.transpose(1, 2).reshape(n, length, width)
                x = self._norm(
                    self._linear(context, layer + "attention.output.dense") + x,
                    layer + "attention.output.LayerNorm",
                )
                inner = functional.gelu(self._linear(x, layer + "intermediate.dense"))
                x = self._norm(
                    self._linear(inner, layer + "output.dense") + x, layer + "output.LayerNorm"
                )
            kept = mask.unsqueeze(-1).to(x.dtype)
            mean = (x * kept).sum(1) / kept.sum(1).clamp(min=1e-9)
            return functional.normalize(mean, dim=1)

    return BertSentenceEncoder().eval()


class BertEncoder:
    """Sentence vectors of a plain BERT model folder (see the module docstring).
    Thread-safe."""

    def __init__(
        self, tokenizer: Any, forward: Any, dimensions: int, *, lower_case: bool, batch_size: int
    ) -> None:
        self._tokenizer = tokenizer
        self._forward = forward
        self.dimensions = dimensions
        self._lower_case = lower_case
        self._batch_size = batch_size
        self._torch = importlib.import_module("torch")
        self.precision = "float32"  # what the forward computes in

    @classmethod
    def of(
        cls, folder: Path, *, batch_size: int = 64, precision: Precision = "auto"
    ) -> BertEncoder | None:
        """The encoder of ``folder``, or None when it is not a plain BERT sentence model
        (sentence-transformers loads it instead). ``precision``: see the module
        docstring."""
        found = _plain_bert(folder)
        if found is None:
            return None
        config, sentence = found
        weights = _weights(folder, int(config["num_hidden_layers"]))
        if weights is None:
            return None
        tokenizers = importlib.import_module("tokenizers")
        tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        longest = min(int(sentence["max_seq_length"]), int(config["max_position_embeddings"]))
        tokenizer.enable_truncation(max_length=longest)
        pad_id = int(config.get("pad_token_id", 0) or 0)
        tokenizer.enable_padding(pad_id=pad_id, pad_token=tokenizer.id_to_token(pad_id))
        eager = _encoder_module(weights, config)
        encoder = cls(
            tokenizer,
            eager,
            int(config["hidden_size"]),
            lower_case=bool(sentence.get("do_lower_case", False)),
            batch_size=batch_size,
        )
        encoder._forward = encoder._traced(eager)
        if precision == "auto" and _native_bfloat16(encoder._torch):
            encoder._to_bfloat16(_encoder_module(weights, config), eager)
        return encoder

    def _to_bfloat16(self, copy: Any, eager: Any) -> None:
        """Run in bfloat16 (``copy``, a fresh float32 module, converted) when its trace's
        vectors agree with ``eager``'s; else stay as is."""
        torch = self._torch
        try:
            candidate = _float_output(copy.to(torch.bfloat16))
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                traced = torch.jit.trace(
                    candidate, self._inputs(["trace it", "a"]), strict=False, check_trace=False
                )
                check = self._inputs(_AGREEMENT_TEXTS)
                agreement = float((traced(*check) * eager(*check)).sum(dim=1).min())
        except Exception:  # an unusual torch: float32 serves
            log.warning("could not run the embedding model in bfloat16", exc_info=True)
            return
        if agreement >= BF16_AGREEMENT:
            self._forward = traced
            self.precision = "bfloat16"
        else:
            log.info("bfloat16 vectors differ (cosine %.5f): the model runs in float32", agreement)

    def _traced(self, eager: Any) -> Any:
        """The trace of ``eager``, made on a padded batch and checked against it on
        another; ``eager`` itself when tracing fails or differs."""
        torch = self._torch
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")  # the tracer's notes on shapes
                traced = torch.jit.trace(
                    eager, self._inputs(["trace it", "a"]), strict=False, check_trace=False
                )
                check = self._inputs(["another, longer text to check the trace", "b c"])
                gap = float((traced(*check) - eager(*check)).abs().max())
        except Exception:  # an unusual torch: the eager forward serves
            log.warning("could not trace the embedding model; it runs eagerly", exc_info=True)
            return eager
        if gap > _TRACE_TOLERANCE:
            log.warning("the embedding model's trace differs by %.2g; it runs eagerly", gap)
            return eager
        return traced

    def _inputs(self, texts: Sequence[str]) -> tuple[Any, Any]:
        # As sentence-transformers tokenizes: stripped, lower-cased when configured.
        cleaned = [t.strip().lower() if self._lower_case else t.strip() for t in texts]
        encodings = self._tokenizer.encode_batch(cleaned)
        torch = self._torch
        ids = torch.tensor([e.ids for e in encodings], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in encodings], dtype=torch.long)
        return ids, mask

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors of ``texts``, in batches of texts of similar length (padding
        costs compute)."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        with self._torch.no_grad():
            for start in range(0, len(order), self._batch_size):
                chosen = order[start : start + self._batch_size]
                rows = self._forward(*self._inputs([texts[i] for i in chosen])).tolist()
                for i, row in zip(chosen, rows, strict=True):
                    vectors[i] = row
        return vectors


_AGREEMENT_TEXTS = [
    "How do I reset my password after the email link expired?",
    "def parse(line):\n    return [field.strip() for field in line.split(',')]",
    "Flight UA 882 from SFO to NRT departs at 11:05 from gate G94.",
    "ok",
]
"""The check batch: a question, code, names and numbers, and a single word (padded)."""


def _native_bfloat16(torch: Any) -> bool:
    """Whether the CPU multiplies bfloat16 fast: it has AMX tiles (PyTorch's own check;
    False when this PyTorch has none). AVX512-BF16 alone was slower than float32."""
    check = getattr(torch.cpu, "_is_amx_tile_supported", None)
    try:
        return bool(check()) if callable(check) else False
    except Exception:  # a check that cannot answer: no
        return False


def _float_output(inner: Any) -> Any:
    """``inner`` with its output cast to float32 and normalized there (the vectors
    callers get)."""
    torch = importlib.import_module("torch")

    class FloatOutput(torch.nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, ids: Any, mask: Any) -> Any:
            # Normalized again in float32: bfloat16's own normalization leaves norms
            # up to 0.2% off one.
            return torch.nn.functional.normalize(self.inner(ids, mask).float(), dim=1)

    return FloatOutput().eval()


__all__ = [
    "BF16_AGREEMENT",
    "SENTENCE_MODULES",
    "BertEncoder",
    "Precision",
    "mean_pooling_only",
]
