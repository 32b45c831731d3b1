"""The one-thread BLAS limit around a search's products."""

from __future__ import annotations

import threading

import numpy as np
from threadpoolctl import threadpool_info

from agentctx.retrieval.blas import one_blas_thread


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_products_inside_run_on_one_thread_and_the_count_comes_back() -> None:
    before = _blas_threads()
    assert before, "numpy's BLAS is loaded"
    matrix = np.arange(4000 * 384, dtype=np.float32).reshape(4000, 384) / 1e6
    query = np.linspace(-1, 1, 384, dtype=np.float32)
    expected = matrix @ query
    with one_blas_thread():
        assert _blas_threads() == [1] * len(before)
        inside = matrix @ query
    assert _blas_threads() == before
    np.testing.assert_allclose(inside, expected, rtol=1e-6)


def test_an_error_inside_still_restores_the_count() -> None:
    before = _blas_threads()
    try:
        with one_blas_thread():
            raise ValueError("boom")
    except ValueError:
        pass
    assert _blas_threads() == before


def test_threads_entering_together_all_get_their_products_and_the_count_comes_back() -> None:
    before = _blas_threads()
    matrix = np.random.default_rng(7).standard_normal((2000, 64)).astype(np.float32)
    query = np.ones(64, dtype=np.float32)
    expected = matrix @ query
    results: list[np.ndarray] = []
    lock = threading.Lock()

    def search() -> None:
        for _ in range(200):
            with one_blas_thread():
                found = matrix @ query
            with lock:
                results.append(found)

    threads = [threading.Thread(target=search) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 800
    assert _blas_threads() == before  # the last one out restored it, whatever the order
    for found in results:
        np.testing.assert_allclose(found, expected, rtol=1e-5)
