"""A model's pages prepared in processes of their own, ahead of a free request slot, so vLLM never waits on them.

A page for a generative engine needs the cpu engine's reading (the anchor of its prompt and the words its answer
is boxed by: ~50 ms of CPU on a digital page, OCR on a scan) and its render and PNG (~30-50 ms). In the GPU worker's one
process all of that ran under one GIL and pdfium's process-wide lock, at most ~7 pages/s per worker, and on a busy
machine vLLM's request slots sat empty while pages waited for it (docs/benchmarks.md, the GPU path). With a
`Preparer` (`engine.prepare_processes` > 0; opt-in: on this project's 2-core machines the threads measured as
fast or faster, docs/benchmarks.md):

- a page's thread hands the page to a pool of spawned processes (text layer, cpu reading, PNG), then takes a
  request slot (the engine's sender threads still cap open requests at `max_in_flight`) with its inputs ready;
- at most `in_hand` = 2 x max_in_flight pages of a worker hold inputs at once (being prepared, waiting for a
  slot, or in a request), however many threads it runs: memory stays bounded, and a slot that frees finds a
  prepared page waiting.

Spawned, not forked: the worker's other threads may hold pdfium's lock or a socket at the moment of a fork. What
a pool process could not make (an exception there) is made again in the page's thread, so a bad page fails as it
always did; a pool that broke (a process killed) is replaced and its pages prepared in their threads meanwhile.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from services.core.errors import clip
from services.core.logging import get_logger
from services.core.metrics import stage_timer
from services.core.pdf import pdf_text_layer
from services.core.settings import EngineKind, Settings
from services.worker.engines.base import PageInput, PageOutput
from services.worker.pipeline.inputs import CpuHypothesis, render_png

log = get_logger(__name__)

# Pages of a worker holding prepared inputs, per request it may keep open: one in the request, one ready for
# the slot it frees.
IN_HAND_PER_SLOT = 2


@dataclass(frozen=True, slots=True)
class PreparedPage:
    """What a pool process made of a page. None where it failed: the page's thread makes that part itself."""

    text_layer: str | None
    reading: PageOutput | None  # the cpu engine's reading (`CpuHypothesis.output()`)
    reading_error: str
    image: bytes | None  # the PNG the model gets, at the page's rotation
    reading_s: float
    render_s: float
    pid: int  # the process that prepared it


def prepare_page(page: PageInput, longest_side: int, settings: Settings) -> PreparedPage:
    """Text layer, cpu reading and PNG of one page, in this process (a pool process, or the page's thread)."""
    text_layer: str | None = ""
    if page.is_pdf:
        try:
            text_layer = pdf_text_layer(page.data)
        except Exception:  # noqa: BLE001 - made again in the page's thread, which fails the page as before
            text_layer = None
    started = time.perf_counter()
    reading, reading_error = None, ""
    try:
        reading = CpuHypothesis(page, settings).output()
    except Exception as exc:  # noqa: BLE001 - the pipeline goes on without a reading, as in one process
        reading_error = clip(f"{type(exc).__name__}: {exc}")
    read = time.perf_counter()
    image: bytes | None
    try:
        image = render_png(page, longest_side, settings)
    except Exception:  # noqa: BLE001 - rendered again in the page's thread, where the error is the page's
        image = None
    return PreparedPage(text_layer, reading, reading_error, image, read - started, time.perf_counter() - read,
                        os.getpid())


def render_page(page: PageInput, longest_side: int, settings: Settings) -> bytes | None:
    """The PNG alone (a page rendered again, turned); None where it failed."""
    try:
        return render_png(page, longest_side, settings)
    except Exception:  # noqa: BLE001 - rendered again in the page's thread
        return None


# The settings of a pool process, given once when it starts (pages carry only their own bytes).
_process_settings: Settings | None = None


def _start_process(settings_json: str) -> None:
    global _process_settings
    _process_settings = Settings.model_validate_json(settings_json)
    parent = multiprocessing.parent_process()
    if parent is not None:
        # A pool process holds both ends of its task queue, so a worker killed outright (SIGKILL, OOM) would leave
        # it waiting forever: it ends with its worker instead.
        threading.Thread(target=_end_with, args=(parent,), daemon=True, name="end-with-worker").start()


def _end_with(parent: multiprocessing.process.BaseProcess) -> None:
    parent.join()
    os._exit(0)


def _prepare_in_process(page: PageInput, longest_side: int) -> PreparedPage:
    assert _process_settings is not None, "a pool process starts with _start_process"
    return prepare_page(page, longest_side, _process_settings)


def _warm_process() -> None:
    from services.worker.engines import load_engine

    assert _process_settings is not None, "a pool process starts with _start_process"
    load_engine(EngineKind.CPU.value, _process_settings)


def _render_in_process(page: PageInput, longest_side: int) -> bytes | None:
    assert _process_settings is not None, "a pool process starts with _start_process"
    return render_page(page, longest_side, _process_settings)


class Preparer:
    """One worker process's pool of `processes` page-preparing processes and its bound on pages in hand."""

    def __init__(self, settings: Settings, processes: int) -> None:
        if processes < 1:
            raise ValueError("a Preparer needs at least one process")
        self.settings, self.processes = settings, processes
        self.in_hand = IN_HAND_PER_SLOT * settings.engine.max_in_flight
        self._slots = threading.BoundedSemaphore(self.in_hand)
        # Guards the counts below; notified on every change, so a test can wait on a state instead of a clock.
        self.changed = threading.Condition()
        self.holding = 0  # pages holding inputs now
        self.waiting = 0  # pages waiting for room to be prepared
        self.prepared = 0  # pages prepared by the pool so far
        self._pool_lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Room for one page's inputs, from before it is prepared until its last request has ended."""
        self._count("waiting", 1)
        self._slots.acquire()
        with self.changed:
            self.waiting -= 1
            self.holding += 1
            self.changed.notify_all()
        try:
            yield
        finally:
            self._count("holding", -1)
            self._slots.release()

    def prepare(self, page: PageInput, longest_side: int) -> PreparedPage:
        """The page prepared by the pool (in this thread when the pool broke)."""
        prepared = self._run(_prepare_in_process, page, longest_side)
        if prepared is None:
            return prepare_page(page, longest_side, self.settings)
        self._count("prepared", 1)
        assert isinstance(prepared, PreparedPage)
        return prepared

    def render(self, page: PageInput, longest_side: int) -> bytes | None:
        """The page's PNG made by the pool (None: make it in this thread)."""
        image = self._run(_render_in_process, page, longest_side)
        return image if isinstance(image, bytes) else None

    def warm(self) -> None:
        """Starts the pool's processes now, each loading the cpu engine, rather than on the first pages."""
        pool = self._current_pool()
        if pool is not None:
            for _ in range(self.processes):  # each submit starts a process while none is idle
                pool.submit(_warm_process)

    def wait_for(self, state: Callable[[Preparer], bool], timeout_s: float) -> bool:
        """Blocks until `state(self)` holds (checked on every change of the counts), or `timeout_s` passed."""
        with self.changed:
            return self.changed.wait_for(lambda: state(self), timeout_s)

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    @property
    def pids(self) -> set[int]:
        """The pool's processes now (empty before the first page)."""
        pool = self._pool
        processes: dict[int, Any] = getattr(pool, "_processes", None) or {}
        return set(processes)

    def _run(self, work: Callable[[PageInput, int], object], page: PageInput, longest_side: int) -> object | None:
        pool = self._current_pool()
        if pool is None:
            return None
        try:
            future: Future[object] = pool.submit(work, page, longest_side)
            return future.result()
        except BrokenProcessPool as exc:
            log.warning("page.prepare_pool_broken", error=clip(str(exc)))
            with self._pool_lock:
                if self._pool is pool:
                    self._pool = None  # the next page starts a new pool
            pool.shutdown(wait=False, cancel_futures=True)
            return None

    def _current_pool(self) -> ProcessPoolExecutor | None:
        with self._pool_lock:
            if self._closed:
                return None
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    max_workers=self.processes, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_process,
                    initargs=(self.settings.model_dump_json(include={"engine", "limits"}),))
            return self._pool

    def _count(self, name: str, step: int) -> None:
        with self.changed:
            setattr(self, name, getattr(self, name) + step)
            self.changed.notify_all()


_preparers: dict[str, Preparer] = {}
_preparers_lock = threading.Lock()


def page_preparer(settings: Settings) -> Preparer | None:
    """This process's Preparer for these engine settings, or None when `engine.prepare_processes` is 0
    (pages are prepared in their own threads)."""
    processes = settings.engine.prepare_processes
    if not processes:
        return None
    key = settings.model_dump_json(include={"engine", "limits"})
    with _preparers_lock:
        preparer = _preparers.get(key)
        if preparer is None:
            preparer = _preparers[key] = Preparer(settings, processes)
        return preparer


class PreparingTurns:
    """Turns to prepare a page in a worker's own threads (no pool): at most `at_once` pages at once, the others
    waiting in arrival order. A GPU worker runs 2 x max_in_flight threads; unbounded, they shared the CPU evenly,
    so the pages waiting all got ready together, late: vLLM's batch sat empty at the start of a burst and thin
    after it (docs/benchmarks.md, the GPU path). In turns the first page is ready after one page's work and the
    next follow at the rate the CPU allows, each taking a request slot as one frees. In one process pdfium's
    lock and the GIL serialise most of that work anyway. `at_once` 0: no bound."""

    def __init__(self, at_once: int) -> None:
        self.at_once = at_once
        # Guards the counts; notified on every change, so a test can wait on a state instead of a clock.
        self.changed = threading.Condition()
        self.preparing = 0
        self._queue: deque[object] = deque()

    @property
    def waiting(self) -> int:
        return len(self._queue)

    @contextmanager
    def turn(self, engine_name: str) -> Iterator[None]:
        """The page's turn, from its text layer to its PNG; the wait for it is the page's `prepare` stage."""
        if not self.at_once:
            yield
            return
        ticket = object()
        with stage_timer("prepare", engine_name), self.changed:
            self._queue.append(ticket)
            self.changed.notify_all()
            try:
                self.changed.wait_for(lambda: self._queue[0] is ticket and self.preparing < self.at_once)
            except BaseException:  # interrupted while waiting: the pages behind it must not wait for it
                self._queue.remove(ticket)
                self.changed.notify_all()
                raise
            self._queue.popleft()
            self.preparing += 1
            self.changed.notify_all()
        try:
            yield
        finally:
            with self.changed:
                self.preparing -= 1
                self.changed.notify_all()

    def wait_for(self, state: Callable[[PreparingTurns], bool], timeout_s: float) -> bool:
        """Blocks until `state(self)` holds (checked on every change of the counts), or `timeout_s` passed."""
        with self.changed:
            return self.changed.wait_for(lambda: state(self), timeout_s)


_turns: dict[int, PreparingTurns] = {}


def preparing_turns(settings: Settings) -> PreparingTurns:
    """This process's turns for `engine.prepare_at_once` (a worker has one value; tests may use several)."""
    at_once = settings.engine.prepare_at_once
    with _preparers_lock:
        turns = _turns.get(at_once)
        if turns is None:
            turns = _turns[at_once] = PreparingTurns(at_once)
        return turns
