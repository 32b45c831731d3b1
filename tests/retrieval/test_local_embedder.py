"""The local embedder: the packaged all-MiniLM-L6-v2 on the CPU, with no network."""

from __future__ import annotations

import json
import math
import shutil
import textwrap
import threading
import zipfile
from pathlib import Path

import pytest
import torch

from agentctx import ConfigError, ContextEngine
from agentctx.llm import LocalEmbedder, local_bert
from agentctx.llm.local import _extract, packaged_model_path
from agentctx.llm.local_bert import BF16_AGREEMENT, BertEncoder
from agentctx.llm.local_traced import TracedEncoder
from agentctx.retrieval import SearchIndex
from fresh_python import run_python

pytestmark = pytest.mark.slow  # loads torch and the model (once per test process)


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def embedder(models_dir: Path) -> LocalEmbedder:
    return LocalEmbedder(models_dir=models_dir)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_neighbours_are_semantic(embedder: LocalEmbedder) -> None:
    puppy, dog, tax, blank = embedder.embed(["puppy", "dog", "tax return", "  "])
    assert embedder.dimensions == len(puppy) == 384
    assert math.isclose(cosine(puppy, puppy), 1.0, rel_tol=1e-5)
    assert cosine(puppy, dog) > 0.6
    assert cosine(puppy, tax) < 0.3
    assert blank == [0.0] * 384
    flight, plane, soup = embedder.embed(
        ["I booked a flight to Berlin", "my plane ticket to Germany", "a recipe for tomato soup"]
    )
    assert cosine(flight, plane) > cosine(flight, soup) + 0.3


def test_the_packaged_model_is_loaded_once_whatever_home_holds_it(tmp_path: Path) -> None:
    """Engines on many homes in one process share one copy of the packaged model (it is
    never freed: one per home would grow with the homes), and a home whose embedder
    finds it loaded does not unpack it. A folder of one's own is a model of its own."""
    script = textwrap.dedent(
        """
        import json, shutil, sys
        from pathlib import Path
        from agentctx.llm import LocalEmbedder
        root = Path(sys.argv[1])
        first = LocalEmbedder(models_dir=root / "a")
        out = {"first_loaded_before": first.loaded}
        vector = first.embed(["hello there"])[0]
        out["first_loaded_after"] = first.loaded
        second = LocalEmbedder(models_dir=root / "b")
        out["second_loaded"] = second.loaded
        out["same_vector"] = second.embed(["hello there"])[0] == vector
        first_model = first._model()
        out["same_model"] = second._model() is first_model
        out["second_unpacked"] = (root / "b").exists()
        out["float32_loaded"] = LocalEmbedder(models_dir=root / "c", precision="float32").loaded
        own = shutil.copytree(first.model_path, root / "own")
        mine = LocalEmbedder(model_path=own)
        out["own_loaded_before"] = mine.loaded
        out["own_vector_close"] = max(
            abs(x - y) for x, y in zip(mine.embed(["hello there"])[0], vector)
        ) < 0.05
        out["own_is_another"] = mine._model() is not first._model()
        out["own_loaded_after"] = mine.loaded
        from agentctx.llm.local import forget_loaded_models
        forget_loaded_models()  # what bench agentstep does before each engine
        out["loaded_after_forgetting"] = [first.loaded, second.loaded, mine.loaded]
        out["reloaded_same_vector"] = second.embed(["hello there"])[0] == vector
        out["reloaded_is_new"] = second._model() is not first_model
        print(json.dumps(out))
        """
    )
    done = run_python(script, str(tmp_path))
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "first_loaded_before": False,
        "first_loaded_after": True,
        "second_loaded": True,
        "same_vector": True,
        "same_model": True,
        "second_unpacked": False,
        "float32_loaded": False,
        "own_loaded_before": False,
        "own_vector_close": True,
        "own_is_another": True,
        "own_loaded_after": True,
        "loaded_after_forgetting": [False, False, False],
        "reloaded_same_vector": True,
        "reloaded_is_new": True,
    }


def test_the_index_finds_meaning_without_shared_words(
    engine: ContextEngine, embedder: LocalEmbedder
) -> None:
    index = SearchIndex(engine.db, embedder)
    session = engine.create_session(user_id="u1")
    for text in (
        "My puppy chewed the sofa again",
        "I still need to file the quarterly tax return",
        "The train to Lyon leaves at noon",
    ):
        session.add_message("user", text)
    hits = index.search("u1", session.id, "young dog", limit=3)
    assert hits[0].seq == 1 and hits[0].lexical_rank is None and hits[0].dense_rank == 1
    assert index.search("u1", session.id, "rail journey", limit=1)[0].seq == 3


def test_the_packaged_model_is_unpacked_once_atomically(tmp_path: Path) -> None:
    target_dir = tmp_path / "models"
    paths: list[Path] = []
    errors: list[BaseException] = []

    def unpack() -> None:
        try:
            paths.append(packaged_model_path(target_dir))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=unpack) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(set(paths)) == 1
    model = paths[0]
    assert (model / "model.safetensors").stat().st_size > 80_000_000
    assert (model / "1_Pooling" / "config.json").is_file()
    assert [p.name for p in target_dir.iterdir()] == [model.name]  # no staging left behind


def test_an_archive_escaping_its_folder_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("../outside.txt", "no")
    with pytest.raises(ConfigError):
        _extract(archive, tmp_path / "models" / "m")
    assert not (tmp_path / "models" / "outside.txt").exists()
    assert not (tmp_path / "outside.txt").exists()


def test_embedding_never_touches_the_network_nor_draws_progress_bars(
    models_dir: Path, embedder: LocalEmbedder
) -> None:
    embedder.model_path  # noqa: B018 - unpacked by the fixture's embedder; reused below
    script = textwrap.dedent(
        """
        import os, socket, sys
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
            os.environ.pop(name, None)
        attempts = []
        def deny(*args, **kwargs):
            attempts.append(args)
            raise OSError("network access attempted")
        socket.socket.connect = deny
        socket.create_connection = deny
        socket.getaddrinfo = deny
        from agentctx.llm import LocalEmbedder
        vector = LocalEmbedder(models_dir=sys.argv[1]).embed(["hello there"])[0]
        from transformers.utils import logging
        print(logging.is_progress_bar_enabled())  # turned back on after the load
        print(len(vector), len(attempts))
        """
    )
    done = run_python(script, str(models_dir))
    assert done.stdout.split()[-3:] == ["True", "384", "0"]
    # No progress bar in the output of a program that embeds the library.
    assert "Loading weights" not in done.stderr


def test_the_engine_freezes_the_loaded_model_out_of_full_collections(
    embedder: LocalEmbedder,
) -> None:
    """With ``embeddings.freeze_gc`` (the default) a full collection no longer walks the
    half million objects torch and the model bring; with it off, it does."""
    script = textwrap.dedent(
        """
        import gc, sys, tempfile
        from agentctx import ContextEngine
        home = tempfile.mkdtemp()
        freeze = sys.argv[2] == "on"
        settings = {"provider": "local", "model_path": sys.argv[1], "freeze_gc": freeze}
        engine = ContextEngine(url=f"sqlite:///{home}/db.sqlite", home=home, embeddings=settings)
        engine.search_index.embedder.embed(["hello there"])
        print(gc.get_freeze_count(), len(gc.get_objects()))
        """
    )
    counts = {}
    for setting in ("on", "off"):
        done = run_python(script, str(embedder.model_path), setting)
        frozen, tracked = (int(x) for x in done.stdout.split()[-2:])
        counts[setting] = frozen, tracked
    assert counts["on"][0] > 100_000 and counts["on"][1] < 10_000
    assert counts["off"][0] == 0 and counts["off"][1] > 100_000


TEXTS = [
    "what is my job?",
    "  stripped as the model strips it \n",
    "我住在哪里",
    "def retry(call):\n    return call()  # once more",
    "word " * 600,  # past the model's 256 tokens: cut the same way
    "a",
    "Héllo WÖRLD, ÇA VA?",
    *(f"tool output line {i}: " + "status=ok id=A{i} " * (i % 9 + 1) for i in range(70)),
]


def sentence_transformers_vectors(folder: Path, texts: list[str]) -> list[list[float]]:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    vectors: list[list[float]] = model.encode(texts, normalize_embeddings=True).tolist()
    return vectors


def gap(a: list[list[float]], b: list[list[float]]) -> float:
    return max(abs(x - y) for u, v in zip(a, b, strict=True) for x, y in zip(u, v, strict=True))


def test_the_packaged_model_runs_on_torch_alone_with_the_models_own_vectors(
    models_dir: Path,
) -> None:
    """The packaged model, a plain BERT sentence model, runs without sentence-transformers:
    in float32 its vectors are those sentence-transformers computes, batched (more texts
    than a batch, of every length) and one at a time, and its forward is a checked trace."""
    embedder = LocalEmbedder(models_dir=models_dir, precision="float32")
    batch = embedder.embed(TEXTS)
    model = embedder._model()
    assert isinstance(model, BertEncoder)
    assert isinstance(model._forward, torch.jit.ScriptModule)
    expected = sentence_transformers_vectors(embedder.model_path, TEXTS)
    assert gap(batch, expected) < 1e-5
    singles = [embedder.embed([text])[0] for text in TEXTS[:8]]
    assert gap(singles, expected[:8]) < 1e-5
    assert embedder.embed(["   "]) == [[0.0] * 384]


def test_loading_the_packaged_model_imports_neither_sentence_transformers_nor_transformers(
    embedder: LocalEmbedder,
) -> None:
    """What makes its load about 1 s instead of 5: the imports that held the interpreter
    lock beside the agent's windows are not made at all. Nor are those of the tracer's own
    check (sympy, torch.distributed.tensor: about 1 s more); the trace is checked against
    the eager model instead."""
    script = textwrap.dedent(
        """
        import sys, time
        from agentctx.llm import LocalEmbedder
        started = time.perf_counter()
        embedder = LocalEmbedder(model_path=sys.argv[1])
        embedder.load()
        print(round(time.perf_counter() - started, 2), len(embedder.embed(["hello there"])[0]))
        print(sorted(m for m in ("sentence_transformers", "transformers", "sklearn", "scipy",
                                 "sympy", "torch.distributed.tensor")
                     if m in sys.modules))
        """
    )
    done = run_python(script, str(embedder.model_path))
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "[]"
    assert lines[-2].split()[1] == "384"


def test_a_sentence_transformers_model_embeds_one_text_through_its_trace(
    embedder: LocalEmbedder,
) -> None:
    """A model sentence-transformers loads (any folder that is not plain BERT) embeds a
    single text, a window's query, through the trace of its transformer, with the
    vectors of its own batch ``encode``."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(embedder.model_path), device="cpu", local_files_only=True)
    traced = TracedEncoder.of(model)
    assert traced is not None
    expected = model.encode(TEXTS[:8], normalize_embeddings=True).tolist()
    assert gap([traced.embed(text) for text in TEXTS[:8]], expected) < 1e-5


@pytest.mark.parametrize(
    "change",
    ["cls pooling", "not bert", "relative positions", "no safetensors", "a weight missing"],
)
def test_a_folder_that_is_not_a_plain_bert_sentence_model_is_left_to_sentence_transformers(
    embedder: LocalEmbedder, tmp_path: Path, change: str
) -> None:
    folder = tmp_path / "model"
    shutil.copytree(embedder.model_path, folder)
    config = json.loads((folder / "config.json").read_text())
    if change == "cls pooling":
        pooling = folder / "1_Pooling" / "config.json"
        settings = json.loads(pooling.read_text())
        settings.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
        pooling.write_text(json.dumps(settings))
    elif change == "not bert":
        config["model_type"] = "roberta"
    elif change == "relative positions":
        config["position_embedding_type"] = "relative_key"
    elif change == "no safetensors":
        (folder / "model.safetensors").unlink()
    else:
        from safetensors.torch import load_file, save_file

        weights = load_file(str(folder / "model.safetensors"))
        del weights["encoder.layer.3.output.dense.weight"]
        save_file(weights, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(config))
    assert BertEncoder.of(folder) is None
    assert BertEncoder.of(embedder.model_path) is not None  # the copy, unchanged, would be


def test_a_model_of_other_modules_keeps_its_own_encode(
    embedder: LocalEmbedder, tmp_path: Path
) -> None:
    """Only a transformer with mean pooling and normalization is traced: a model pooled
    otherwise embeds one text with its own ``encode``."""
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers 6 moved them (the old path warns)
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:
        from sentence_transformers.models import Pooling, Transformer

    cls_pooled = SentenceTransformer(
        modules=[
            Transformer(str(embedder.model_path)),
            Pooling(384, pooling_mode="cls"),
        ],
        device="cpu",
    )
    assert TracedEncoder.of(cls_pooled) is None
    folder = tmp_path / "cls-model"
    cls_pooled.save(str(folder))
    own = LocalEmbedder(folder)
    (single,) = own.embed(["what is my job?"])
    expected = cls_pooled.encode(["what is my job?"], normalize_embeddings=True)[0].tolist()
    assert max(abs(a - b) for a, b in zip(single, expected, strict=True)) < 1e-5


def test_auto_precision_runs_in_bfloat16_only_where_the_cpu_computes_it_natively(
    embedder: LocalEmbedder,
) -> None:
    """``precision="auto"`` (the default) runs in bfloat16 on a CPU with AMX, and its
    vectors are unit vectors that agree with float32's; elsewhere (AVX512-BF16 alone
    included) it runs in float32."""
    model = embedder._model()
    assert isinstance(model, BertEncoder)
    native = local_bert._native_bfloat16(torch)
    assert native == bool(torch.cpu._is_amx_tile_supported())
    assert model.precision == ("bfloat16" if native else "float32")
    assert embedder.precision == model.precision  # what the embedder reports
    exact = BertEncoder.of(embedder.model_path, precision="float32")
    assert exact is not None and exact.precision == "float32"
    ours, theirs = embedder.embed(TEXTS), exact.embed(TEXTS)
    assert min(cosine(a, b) for a, b in zip(ours, theirs, strict=True)) >= BF16_AGREEMENT
    assert all(abs(math.fsum(x * x for x in v) - 1) < 1e-5 for v in ours)


def test_bfloat16_is_used_only_when_its_vectors_agree_with_float32s(
    embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bfloat16 forward is checked against float32's on a check batch first (here
    on any CPU: the check is told bfloat16 is native), and a forward that disagrees
    more than :data:`BF16_AGREEMENT` allows is not used; a CPU without it keeps float32."""
    folder = embedder.model_path
    monkeypatch.setattr(local_bert, "_native_bfloat16", lambda _torch: True)
    agreeing = BertEncoder.of(folder)
    assert agreeing is not None and agreeing.precision == "bfloat16"
    assert isinstance(agreeing._forward, torch.jit.ScriptModule)
    monkeypatch.setattr(local_bert, "BF16_AGREEMENT", 1.0 + 1e-3)  # no forward agrees so
    strict = BertEncoder.of(folder)
    assert strict is not None and strict.precision == "float32"
    monkeypatch.setattr(local_bert, "_native_bfloat16", lambda _torch: False)
    without = BertEncoder.of(folder)
    assert without is not None and without.precision == "float32"


def test_the_precision_setting_reaches_the_model(tmp_path: Path, models_dir: Path) -> None:
    shutil.copytree(models_dir, tmp_path / "models", dirs_exist_ok=True)
    engine = ContextEngine(
        url=f"sqlite:///{tmp_path}/a.db",
        home=tmp_path,
        jobs="manual",
        embeddings={"provider": "local", "precision": "float32"},
    )
    with engine:
        embedder = engine.search_index.embedder
        assert isinstance(embedder, LocalEmbedder)
        embedder.embed(["hello"])
        model = embedder._model()
        assert isinstance(model, BertEncoder) and model.precision == "float32"
        assert embedder.precision == "float32"
