"""PyTorch's native libraries are loaded by the model's thread with the interpreter lock
free: other threads run Python meanwhile, and torch then imports and computes as usual.
Each case runs in a fresh interpreter (torch must not be imported yet)."""

from __future__ import annotations

import json
import sys

import pytest

from fresh_python import run_python

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def run_fresh(code: str) -> dict[str, object]:
    done = run_python(code)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_other_threads_run_while_the_libraries_load_and_torch_works_after() -> None:
    found = run_fresh(
        """
        import json, sys, threading, time
        from agentctx.llm.native_preload import TORCH_LIBRARIES, preload_torch
        gaps, stop = [], False
        def ticker():
            last = time.perf_counter()
            while not stop:
                now = time.perf_counter()
                gaps.append(now - last)
                last = now
                time.sleep(0.001)
        thread = threading.Thread(target=ticker)
        thread.start()
        time.sleep(0.05)
        gaps.clear()
        started = time.perf_counter()
        loaded = preload_torch()
        took = time.perf_counter() - started
        stop = True
        thread.join()
        maps = open("/proc/self/maps").read()
        import torch
        value = float(torch.nn.functional.gelu(torch.ones(2)).sum())
        print(json.dumps({
            "loaded": loaded, "expected": list(TORCH_LIBRARIES), "took": took,
            "longest_gap": max(gaps), "in_maps": "libtorch_cpu.so" in maps,
            "value": value, "again": preload_torch(),
        }))
        """
    )
    assert found["loaded"] == found["expected"] and found["in_maps"]
    # Held through the load, the lock would have stopped the ticker for nearly all of it.
    assert isinstance(found["took"], float) and isinstance(found["longest_gap"], float)
    assert found["longest_gap"] < found["took"] / 2
    assert found["value"] == pytest.approx(2 * 0.8413447, abs=1e-6)
    assert found["again"] == []  # torch imported: nothing left to load


def test_nothing_is_loaded_without_a_torch_folder() -> None:
    found = run_fresh(
        """
        import json
        from agentctx.llm import native_preload
        native_preload.torch_library_folder = lambda: None
        print(json.dumps({"loaded": native_preload.preload_torch()}))
        """
    )
    assert found["loaded"] == []
