"""Office documents to PDF with LibreOffice, one sandboxed process per document.

Each conversion gets a throwaway profile with macros switched off, its own network namespace where the
kernel allows one (`unshare -n`: no linked image or DTD is fetched), an address-space limit, a timeout after
which its whole process group is killed, and only the fonts pinned in `fonts.py` (not the host's). At most
`pool_size` conversions run on a host at once (`slot()`): a flood of uploads waits in the queue, never as a
hundred soffice processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from services.core.errors import ConversionFailed, ConversionTimeout, EngineUnavailable
from services.core.formats import HTML, OFFICE_EXTENSIONS
from services.core.logging import get_logger
from services.worker.office import fonts

log = get_logger(__name__)

# Macro security "very high" and macro execution off, no update check, no recovery: set in every profile.
_SETTINGS = (
    ("Common/Security/Scripting", "MacroSecurityLevel", "3"),
    ("Common/Security/Scripting", "DisableMacrosExecution", "true"),
    ("Common/Security/Scripting", "BlockUntrustedRefererLinks", "true"),
    ("Common/Misc", "FirstRun", "false"),
    ("Recovery/RecoveryInfo", "Enabled", "false"),
)
_PROFILE = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
    'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
    + "".join(f'<item oor:path="/org.openoffice.Office.{path}"><prop oor:name="{name}" oor:op="fuse">'
              f"<value>{value}</value></prop></item>\n" for path, name, value in _SETTINGS)
    + "</oor:items>\n"
)


class ConverterBusy(EngineUnavailable):
    """Every conversion slot of this host is taken: the document waits in the queue and tries again."""

    code = "converter_busy"


def soffice_path() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def available() -> bool:
    return soffice_path() is not None


@functools.cache
def _can_unshare_network() -> bool:
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    try:
        return subprocess.run([unshare, "-n", "true"], capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@contextlib.contextmanager
def slot(pool_size: int, wait_s: float, lock_dir: Path | None = None) -> Iterator[int]:
    """One of `pool_size` conversion slots of this host (file locks, so every worker process shares them)."""
    folder = lock_dir or Path(tempfile.gettempdir()) / "pagemill-convert-slots"
    folder.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    while True:
        for number in range(pool_size):
            handle = open(folder / f"slot-{number}.lock", "w")  # noqa: SIM115 - held for the with block
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            try:
                yield number
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        if time.monotonic() >= deadline:
            raise ConverterBusy(f"all {pool_size} conversion slots are busy")
        time.sleep(0.2)


def _import_filter(media_type: str) -> list[str]:
    """HTML opens in Writer, not Writer/Web (LibreOffice's choice for .html): Writer/Web's PDF export drops a
    leading <h1> and leaves an empty first page, and it would lose the title of every web page and e-mail."""
    return ["--infilter=HTML (StarWriter)"] if media_type == HTML else []


def convert(data: bytes, media_type: str, *, timeout_s: float, memory_mb: int, target: str = "pdf") -> bytes:
    """The document as `target` (pdf, xlsx). Raises ConversionTimeout / ConversionFailed; never leaves a process
    behind."""
    executable = soffice_path()
    if executable is None:
        raise ConversionFailed("LibreOffice is not installed on this worker")
    with tempfile.TemporaryDirectory(prefix="pagemill-convert-") as work:
        folder = Path(work)
        source = folder / f"document{OFFICE_EXTENSIONS[media_type]}"
        source.write_bytes(data)
        profile = folder / "profile"
        (profile / "user").mkdir(parents=True)
        (profile / "user" / "registrymodifications.xcu").write_text(_PROFILE)
        out = folder / "out"
        argv = [executable, "--headless", "--invisible", "--norestore", "--nolockcheck", "--nodefault", "--nologo",
                "--nofirststartwizard", f"-env:UserInstallation={profile.as_uri()}", *_import_filter(media_type),
                "--convert-to", target, "--outdir", str(out), str(source)]
        if _can_unshare_network():
            argv = ["unshare", "-n", *argv]
        limit = memory_mb << 20

        def confine() -> None:  # in the child, before exec
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        # Only the pinned fonts (fonts.py): the pages, and so the words read back, do not change with the host's.
        env = {**os.environ, "HOME": str(folder), "SAL_USE_VCLPLUGIN": "svp", **fonts.environment()}
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=folder, env=env,
                                   preexec_fn=confine, start_new_session=True)  # noqa: PLW1509 - rlimits only
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise ConversionTimeout(f"the conversion took longer than {timeout_s:g} s") from None
        finally:
            _kill_group(process)  # soffice may leave a child behind even after a clean exit
        produced = out / f"{source.stem}.{target}"
        log.info("convert.done", media_type=media_type, target=target, ms=int((time.perf_counter() - started) * 1000),
                 returncode=process.returncode, ok=produced.exists())
        if process.returncode != 0 or not produced.exists() or produced.stat().st_size == 0:
            detail = (stderr or stdout).decode("utf-8", errors="replace").strip()[-300:]
            raise ConversionFailed(f"LibreOffice could not convert the document ({detail or 'no output'})")
        return produced.read_bytes()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
