"""The worker's import picture keeps issue 25's rules: no arrow back up, no private import, cpu insides sealed."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tools.worker_graph import measure


def test_the_worker_has_no_upward_private_or_cpu_inside_import() -> None:
    figures = measure()
    assert figures.upward == []
    assert figures.private == []
    assert figures.cpu_insides == []
    assert figures.engine_getattr == [] and figures.engine_any == []
    assert figures.updates_outside_lifecycle == []  # every UPDATE of documents and pages is in core/lifecycle
    assert len(figures.openai_clients) == 1


def test_the_check_sees_each_kind_of_breach(tmp_path: Path) -> None:
    """So the test above cannot pass by seeing nothing."""
    engines = tmp_path / "services" / "worker" / "engines"
    (engines / "vllm").mkdir(parents=True)
    (engines / "vllm" / "engine.py").write_text(textwrap.dedent("""
        from services.worker.pipeline.page import run_page
        from services.worker.engines.cpu.model import Box
        from services.worker.engines.base import _private
        def f(engine):
            return getattr(engine, "model", "")
    """))
    worker = tmp_path / "services" / "worker"
    (worker / "split.py").write_text(textwrap.dedent("""
        import sqlalchemy as sa
        from services.core.db.models import Document
        def mark(session, document):
            session.execute(sa.update(Document).values(status="running"))
            document.status, document.enqueued_at = "queued", None
    """))
    figures = measure(tmp_path)
    assert len(figures.updates_outside_lifecycle) == 2  # the statement, and the ORM row's state written
    assert len(figures.upward) == 1 and len(figures.cpu_insides) == 1 and len(figures.private) == 1
    assert len(figures.engine_getattr) == 1
