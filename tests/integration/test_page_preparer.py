"""A GPU worker's page preparer: real spawned processes make what the page's thread would make, at most
`in_hand` pages hold inputs at once, and a pool that lost a process is replaced without losing the page.

The model is a stand-in behind the Engine interface (no vLLM here; the real path runs in `make bench-gpu-path`
and tests/vllm); the cpu reading, the render and the pool are the real ones.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import psutil
import pytest

from services.core.settings import Settings
from services.worker.engines.base import PageInput, PageOutput
from services.worker.engines.vllm.presets import Preset, get_preset
from services.worker.pipeline.page import PageOutcome, run_page
from services.worker.pipeline.prepare import Preparer, PreparingTurns, page_preparer, prepare_page, preparing_turns
from tests.harness import REPO
from tests.pdfs import SENTENCE, text_page
from tests.stand_in import answered_page, image_size

GOOD = "# Quarterly report\n\n" + SENTENCE + "\n"
TURNED = "---\nprimary_language: en\nis_rotation_valid: false\nrotation_correction: 90\n---\nsdrawkcab"
UPRIGHT = "---\nprimary_language: en\nis_rotation_valid: true\nrotation_correction: 0\n---\n" + GOOD
WAIT_S = 120  # a bound on waiting for a signal on a loaded machine, never a pause


@dataclass
class StandInModel:
    """Answers from a script (the last answer repeats), read through a real preset's parser. With `gate` set,
    each call waits for it: the test then sees how many pages reached the model at once."""

    script: list[str]
    preset: Preset = field(default_factory=lambda: get_preset("generic"))
    gate: threading.Event | None = None
    name: str = "vllm"
    model: str = "stand-in"
    needs_text_layer: bool = True
    needs_image: bool = True
    needs_anchor: bool = True
    generative: bool = True
    render_longest_side: int = 400
    calls: list[dict[str, object]] = field(default_factory=list)
    inside: int = 0
    most_inside: int = 0
    changed: threading.Condition = field(default_factory=threading.Condition)

    def parse(self, page: PageInput, *, temperature: float = 0.0) -> PageOutput:
        assert page.image is not None
        with self.changed:
            self.calls.append({"rotation": page.rotation, "anchor": page.anchor, "size": image_size(page),
                               "image": page.image})
            raw = self.script[min(len(self.calls), len(self.script)) - 1]
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
            self.changed.notify_all()
        try:
            if self.gate is not None:
                assert self.gate.wait(WAIT_S), "the test never opened the gate"
        finally:
            with self.changed:
                self.inside -= 1
                self.changed.notify_all()
        return answered_page(self.preset, page, raw, engine=self.name, model=self.model)

    def check_health(self) -> None:
        return None


def settings(**engine: object) -> Settings:
    return Settings(engine={"kind": "vllm", "max_attempts": 3, **engine})


def page(index: int = 0) -> PageInput:
    return PageInput("doc", index, "application/pdf", text_page())


@pytest.fixture
def preparer() -> Iterator[Preparer]:
    made = Preparer(settings(max_in_flight=2), processes=2)
    yield made
    made.close()


def test_a_page_prepared_in_the_pool_is_the_page_prepared_in_its_own_thread(preparer: Preparer) -> None:
    here = prepare_page(page(), 400, preparer.settings)
    there = preparer.prepare(page(), 400)
    assert there.pid != os.getpid() and there.pid in preparer.pids
    assert there.text_layer == here.text_layer and SENTENCE in (there.text_layer or "")
    assert there.image == here.image and there.image is not None  # the same PNG, byte for byte
    assert there.reading is not None and here.reading is not None
    assert there.reading.markdown == here.reading.markdown and SENTENCE in there.reading.markdown
    assert [w.text for w in there.reading.words] == [w.text for w in here.reading.words]


def outcome_facts(outcome: PageOutcome) -> tuple[object, ...]:
    output = outcome.output
    return (output.markdown, outcome.attempts, outcome.is_fallback, outcome.details["anchor_source"],
            outcome.details["anchor_chars"], [(e.type, e.bbox) for e in output.elements], output.rotation)


def test_a_page_through_the_preparer_ends_as_it_does_without_one(preparer: Preparer) -> None:
    alone, pooled = StandInModel([GOOD]), StandInModel([GOOD])
    expected = run_page(alone, page(), preparer.settings)
    outcome = run_page(pooled, page(), preparer.settings, preparer=preparer)
    assert outcome_facts(outcome) == outcome_facts(expected)
    assert pooled.calls == alone.calls  # the same anchor and the same image reached the model
    assert preparer.prepared == 1 and preparer.holding == 0
    assert any(e.bbox is not None for e in outcome.output.elements)  # boxed by the pool's cpu reading


def test_a_page_the_model_calls_turned_is_rendered_turned_by_the_pool() -> None:
    olmocr = settings(max_in_flight=2, preset="olmocr")
    model = StandInModel([TURNED, UPRIGHT], preset=get_preset("olmocr"))
    preparer = Preparer(olmocr, processes=1)
    try:
        outcome = run_page(model, page(), olmocr, preparer=preparer)
    finally:
        preparer.close()
    assert not outcome.is_fallback and outcome.output.markdown == GOOD and outcome.output.rotation == 90
    (w0, h0), (w1, h1) = model.calls[0]["size"], model.calls[1]["size"]  # type: ignore[misc]
    assert w0 < h0 and w1 > h1  # a portrait page, then the same page turned on its side


def test_no_more_pages_hold_inputs_than_two_per_request_slot(preparer: Preparer) -> None:
    """Ten pages at once on a worker of max_in_flight 2: four are prepared and reach the model (two in requests
    in a real engine, two ready for the slots they free), six wait unprepared; all end once the model answers."""
    assert preparer.in_hand == 4
    model = StandInModel([GOOD], gate=threading.Event())
    outcomes: list[PageOutcome] = []
    pages = [page(index) for index in range(10)]  # made here: the test's PDF writer is not thread-safe

    def one(index: int) -> None:
        outcomes.append(run_page(model, pages[index], preparer.settings, preparer=preparer))

    threads = [threading.Thread(target=one, args=(index,)) for index in range(10)]
    for thread in threads:
        thread.start()
    try:
        with model.changed:
            assert model.changed.wait_for(lambda: model.inside == 4, WAIT_S)
        assert preparer.wait_for(lambda p: p.waiting == 6, WAIT_S)
        assert preparer.prepared == 4 and preparer.holding == 4
    finally:
        assert model.gate is not None
        model.gate.set()
        for thread in threads:
            thread.join(WAIT_S)
    assert len(outcomes) == 10 and all(o.output.markdown == GOOD and not o.is_fallback for o in outcomes)
    assert model.most_inside == 4 and preparer.prepared == 10 and preparer.holding == preparer.waiting == 0


def test_a_warmed_pool_has_its_processes_before_the_first_page() -> None:
    preparer = Preparer(settings(max_in_flight=4), processes=2)
    try:
        assert preparer.pids == set()
        preparer.warm()
        started = preparer.pids
        assert len(started) == 2
        assert preparer.prepare(page(), 400).pid in started  # no new process for the first page
    finally:
        preparer.close()


def test_only_a_worker_given_processes_has_a_preparer() -> None:
    assert page_preparer(settings()) is None  # unset: the CLI sets it for a GPU worker alone
    assert page_preparer(settings(prepare_processes=0)) is None


def test_pages_prepared_in_the_threads_wait_for_their_turn_before_any_of_their_work() -> None:
    """prepare_at_once 1: while one page has the turn, the next pages wait for it without reaching the model;
    once it ends they are prepared and answered as usual."""
    one_at_once = settings(prepare_at_once=1)
    turns = preparing_turns(one_at_once)
    model = StandInModel([GOOD])
    pages = [page(index) for index in range(2)]  # made here: the test's PDF writer is not thread-safe
    outcomes: list[PageOutcome] = []
    holding, release = threading.Event(), threading.Event()

    def hold_the_turn() -> None:
        with turns.turn("vllm"):
            holding.set()
            assert release.wait(WAIT_S), "the test never released the turn"

    holder = threading.Thread(target=hold_the_turn)
    threads = [threading.Thread(target=lambda p=p: outcomes.append(run_page(model, p, one_at_once))) for p in pages]
    holder.start()
    try:
        assert holding.wait(WAIT_S)
        for thread in threads:
            thread.start()
        assert turns.wait_for(lambda t: t.waiting == 2, WAIT_S)
        assert turns.preparing == 1 and model.calls == []  # neither page was prepared nor sent meanwhile
    finally:
        release.set()
        for thread in [holder, *threads]:
            thread.join(WAIT_S)
    assert len(outcomes) == 2 and all(o.output.markdown == GOOD and not o.is_fallback for o in outcomes)
    assert all(SENTENCE in str(call["anchor"]) and call["image"] for call in model.calls)
    assert turns.preparing == turns.waiting == 0


@pytest.mark.parametrize("at_once", [1, 2])
def test_turns_are_given_in_arrival_order_and_at_most_at_once_at_a_time(at_once: int) -> None:
    """The first `at_once` hold their turns; the others wait in the order they came. With one turn, each takes
    it only after the one before it ended, so the order they ran in is the order they came in."""
    turns = PreparingTurns(at_once=at_once)
    names = "abcde"
    order: list[str] = []
    release = threading.Event()

    def take(name: str) -> None:
        with turns.turn("vllm"):
            order.append(name)
            if name == "a" or (at_once == 2 and name == "b"):
                assert release.wait(WAIT_S), "the test never released the turns"

    threads = [threading.Thread(target=take, args=(name,)) for name in names]
    try:
        for arrived, thread in enumerate(threads, 1):  # each starts once the one before it has arrived
            thread.start()
            assert turns.wait_for(lambda t, arrived=arrived: t.preparing + t.waiting == arrived, WAIT_S)
        assert turns.preparing == at_once and turns.waiting == len(names) - at_once
        assert order == list(names[:at_once])
    finally:
        release.set()
        for thread in threads:
            thread.join(WAIT_S)
    assert sorted(order) == list(names) and turns.preparing == turns.waiting == 0
    if at_once == 1:
        assert order == list(names)


def test_no_bound_gives_every_page_its_turn_at_once() -> None:
    turns = PreparingTurns(at_once=0)
    with turns.turn("vllm"), turns.turn("vllm"), turns.turn("vllm"):
        assert turns.waiting == 0


def test_a_pool_that_lost_its_process_is_replaced_and_the_page_still_prepared() -> None:
    preparer = Preparer(settings(max_in_flight=1), processes=1)
    try:
        first = preparer.prepare(page(), 400)
        os.kill(first.pid, signal.SIGKILL)
        again = preparer.prepare(page(), 400)  # the broken pool's page: made in this thread
        assert again.pid == os.getpid() and again.image == first.image
        after = preparer.prepare(page(), 400)  # a new pool
        assert after.pid not in (first.pid, os.getpid()) and after.image == first.image
    finally:
        preparer.close()


WORKER = """
import sys
from services.core.settings import Settings
from services.worker.pipeline.prepare import Preparer
preparer = Preparer(Settings(engine={"kind": "vllm"}), 2)
preparer.warm()
print(" ".join(map(str, sorted(preparer.pids))), flush=True)
sys.stdin.read()  # until the test kills it
"""


def test_a_worker_killed_outright_leaves_no_preparing_process_behind() -> None:
    worker = subprocess.Popen([sys.executable, "-c", WORKER], cwd=REPO, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None
        pids = [int(pid) for pid in worker.stdout.readline().split()]
        assert len(pids) == 2
        pool = [psutil.Process(pid) for pid in pids]
    finally:
        worker.kill()  # SIGKILL: no atexit, no executor shutdown
        worker.wait(WAIT_S)
    _, alive = psutil.wait_procs(pool, timeout=WAIT_S)
    assert not alive, f"pool processes outlived their worker: {alive}"
