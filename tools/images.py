"""`make images`: the pagemill images built with docker where a daemon answers, else podman, else buildah.

Each image is tagged `<name>:dev` and `<name>:in-<hash>`, the hash taken over what the build reads (the
Dockerfile, the files its COPY lines name, less .dockerignore, the base image's id and the build arguments): an
image whose hash is already there is not built again, so a second run on the same machine costs seconds, and any
change to an input (a line of services/, uv.lock) builds it again. One build at a time: the machine is shared.

The base is the Dockerfiles' default `python:3.11-slim-bookworm` where it is present or can be pulled. Where no
registry answers, a stand-in is made from Debian's packages and said so: `debootstrap bookworm` into a folder,
imported as `localhost/pagemill-debian:bookworm`, then Debian's python3 on top (docker/base/python.Dockerfile).
`--backing` also builds Redis, PostgreSQL and S3 stand-ins the same way (docker/standins/) where the official
images of docker/compose.yaml cannot be pulled; `make test-deploy` uses them behind the same environment.

What was built, its size and its build time go to `.pagemill/images.json` (read by tests/containers and docs).
"""

from __future__ import annotations

import argparse
import fcntl
import fnmatch
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
REPORT = REPO / ".pagemill" / "images.json"
CONTAINERS_CONF = DOCKER / "podman" / "containers.conf"
DEFAULT_PYTHON_IMAGE = "python:3.11-slim-bookworm"
DEBIAN_IMAGE = "localhost/pagemill-debian:bookworm"
LOCAL_PYTHON_IMAGE = "localhost/pagemill-python:3.11-bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"

# name -> Dockerfile; the product images first.
PRODUCT = {"pagemill-gateway": "gateway.Dockerfile", "pagemill-worker": "worker.Dockerfile",
           "pagemill-worker-gpu": "worker-gpu.Dockerfile"}
# compose service -> (official image in docker/compose.yaml, stand-in Dockerfile, compose variable naming it)
BACKING = {"redis": ("redis:7.4-alpine", "standins/redis.Dockerfile", "PAGEMILL_REDIS_IMAGE"),
           "postgres": ("postgres:16-alpine", "standins/postgres.Dockerfile", "PAGEMILL_POSTGRES_IMAGE"),
           "minio": ("minio/minio:RELEASE.2025-04-22T22-12-26Z", "standins/s3.Dockerfile", "PAGEMILL_S3_IMAGE")}


class BuildError(RuntimeError):
    pass


@dataclass
class Built:
    ref: str
    dockerfile: str
    key: str
    size_mb: float
    build_s: float
    cached: bool


@dataclass
class Report:
    builder: str
    python_image: str
    python_image_made_here: bool
    images: dict[str, Built] = field(default_factory=dict)
    backing: dict[str, str] = field(default_factory=dict)  # compose variable -> image
    notes: list[str] = field(default_factory=list)


def say(message: str) -> None:
    print(f"images: {message}", flush=True)


def container_env() -> dict[str, str]:
    """podman settings for a machine without systemd: the repository's containers.conf unless one is given."""
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(CONTAINERS_CONF))
    return env


def run(argv: list[str], *, check: bool = True, capture: bool = True, stdin: int | None = None,
        **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, env=container_env(), text=True, stdin=stdin, check=False,
                            capture_output=capture, **kwargs)  # type: ignore[call-overload]
    if check and result.returncode != 0:
        raise BuildError(f"{shlex.join(argv)} exited {result.returncode}:\n{(result.stderr or '')[-4000:]}")
    return result  # type: ignore[no-any-return]


def pick_builder(wanted: str = "auto") -> str:
    """docker where its daemon answers, else podman, else buildah (whose images podman sees too)."""
    candidates = ["docker", "podman", "buildah"] if wanted == "auto" else [wanted]
    for tool in candidates:
        if not shutil.which(tool):
            continue
        probe = [tool, "info"] if tool != "buildah" else [tool, "images"]
        if run(probe, check=False).returncode == 0:
            return tool
    raise BuildError(f"no container builder works here (tried {', '.join(candidates)}): "
                     "install docker, or podman and buildah (make container-tools)")


def qualified(ref: str) -> str:
    """Docker Hub's implied names spelt out (podman resolves no short name without a search registry)."""
    first = ref.split("/", 1)[0]
    if "/" in ref and ("." in first or ":" in first or first == "localhost"):
        return ref
    return f"docker.io/{ref}" if "/" in ref else f"docker.io/library/{ref}"


class Builder:
    def __init__(self, tool: str) -> None:
        self.tool = tool
        # podman and buildah share one image store; docker has its own.
        self.cli = "podman" if tool == "buildah" and shutil.which("podman") else tool

    def image_id(self, ref: str) -> str | None:
        if self.tool == "buildah" and self.cli == "buildah":
            result = run(["buildah", "inspect", "--type", "image", "--format", "{{.FromImageID}}", ref], check=False)
        else:
            result = run([self.cli, "image", "inspect", "--format", "{{.Id}}", ref], check=False)
        return result.stdout.strip() or None if result.returncode == 0 else None

    def size_mb(self, ref: str) -> float:
        result = run([self.cli, "image", "inspect", "--format", "{{.Size}}", ref])
        return round(int(result.stdout.strip()) / 1e6, 1)

    def pull(self, ref: str) -> bool:
        if self.image_id(ref):
            return True
        say(f"pulling {ref}")
        result = run([self.cli, "pull", "-q", qualified(ref) if self.cli != "docker" else ref], check=False)
        if result.returncode != 0:
            say(f"cannot pull {ref}: {result.stderr.strip().splitlines()[-1] if result.stderr.strip() else '?'}")
        return result.returncode == 0

    def tag(self, ref: str, new: str) -> None:
        run([self.cli, "tag", ref, new])

    def build(self, dockerfile: Path, tag: str, build_args: dict[str, str]) -> None:
        args = [f"--build-arg={k}={v}" for k, v in build_args.items()]
        if self.tool == "docker":
            argv = ["docker", "build", "-f", str(dockerfile), "-t", tag, *args, str(REPO)]
        else:
            # chroot isolation: no user namespace or nested runtime is needed inside this machine's sandbox.
            verb = ["buildah", "bud"] if self.tool == "buildah" else ["podman", "build"]
            argv = [*verb, "--isolation", "chroot", "--layers", "-f", str(dockerfile), "-t", tag, *args, str(REPO)]
        say(shlex.join(argv))
        result = run(argv, capture=False, stdin=subprocess.DEVNULL, check=False)
        if result.returncode != 0:
            raise BuildError(f"building {tag} from {dockerfile.name} failed (exit {result.returncode})")

    def forget_older(self, repo: str, keep: str) -> None:
        """Untags this image's earlier input hashes (their layers go with the next prune), so repeated builds on
        one machine do not pile up; layers the current image uses stay."""
        listed = run([self.cli, "images", "--format", "{{.Repository}}:{{.Tag}}", repo], check=False).stdout
        for ref in listed.split():
            name = ref.rsplit("/", 1)[-1]
            if name.startswith(f"{repo}:in-") and name != keep:
                # untag, not remove: removing would take the build's cached parent layers with it
                untag = [self.cli, "untag", ref, ref] if self.cli == "podman" else [self.cli, "rmi", "--no-prune", ref]
                run(untag, check=False)
        # build-stage layers older than a week (kept younger: they are the next build's cache)
        run([self.cli, "image", "prune", "-f", "--filter", "until=168h"], check=False)

    def import_rootfs(self, folder: Path, ref: str) -> None:
        tar = subprocess.Popen(["tar", "-C", str(folder), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        result = run([self.cli, "import", "-", ref], stdin=tar.stdout.fileno(), check=False)
        tar.stdout.close()
        if tar.wait() != 0 or result.returncode != 0:
            raise BuildError(f"importing {folder} as {ref} failed: {result.stderr[-2000:]}")


# Inputs and their hash -----------------------------------------------------------------------------------------


def dockerignore() -> list[str]:
    path = REPO / ".dockerignore"
    return [p.strip().rstrip("/") for p in path.read_text().splitlines() if p.strip() and not p.startswith("#")]


def ignored(relative: str, patterns: list[str]) -> bool:
    parts = relative.split("/")
    for pattern in patterns:
        bare = pattern.removeprefix("**/")
        if fnmatch.fnmatch(relative, pattern) or relative.startswith(pattern + "/"):
            return True
        if pattern.startswith("**/") and any(fnmatch.fnmatch(part, bare) for part in parts):
            return True
    return False


def copy_sources(dockerfile: Path) -> list[str]:
    """The build-context paths a Dockerfile's COPY lines name (not those copied from another stage)."""
    sources: list[str] = []
    for line in dockerfile.read_text().splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            sources += [w for w in words[1:-1] if not w.startswith("--")]
    return sources


def input_files(dockerfile: Path) -> list[Path]:
    patterns = dockerignore()
    files: list[Path] = []
    for source in copy_sources(dockerfile):
        path = REPO / source
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        files += [p for p in candidates if not ignored(p.relative_to(REPO).as_posix(), patterns)
                  and "node_modules" not in p.parts]
    return files


def input_key(dockerfile: Path, base_id: str, build_args: dict[str, str]) -> str:
    digest = hashlib.sha256()
    digest.update(dockerfile.read_bytes())
    digest.update(f"{base_id}\n{sorted(build_args.items())}\n".encode())
    for path in input_files(dockerfile):
        digest.update(f"{path.relative_to(REPO).as_posix()}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# The base image ------------------------------------------------------------------------------------------------


def make_debian(builder: Builder) -> None:
    """Debian bookworm by debootstrap from Debian's own packages, imported as an image (cached on this machine)."""
    if builder.image_id(DEBIAN_IMAGE):
        return
    if not shutil.which("debootstrap"):
        raise BuildError("no registry answers and debootstrap is missing to make a base image: "
                         "make container-tools (Debian's debootstrap), or pass PAGEMILL_PYTHON_IMAGE")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pagemill-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        say(f"no base image can be pulled: making {DEBIAN_IMAGE} with debootstrap from Debian's packages")
        run(["debootstrap", "--variant=minbase", "--include=ca-certificates", "bookworm", str(root),
             DEBIAN_MIRROR], capture=True)
        (root / "etc/apt/sources.list").write_text(
            f"deb {DEBIAN_MIRROR} bookworm main\ndeb {DEBIAN_MIRROR} bookworm-updates main\n"
            "deb http://deb.debian.org/debian-security bookworm-security main\n")
        # Certificate authorities this host added (a TLS-inspecting proxy between it and the package registries):
        # the builds inside reach PyPI and npm through the same proxy.
        extra = sorted(Path("/usr/local/share/ca-certificates").glob("*.crt"))
        if extra:
            target = root / "usr/local/share/ca-certificates"
            target.mkdir(parents=True, exist_ok=True)
            for cert in extra:
                shutil.copy2(cert, target / cert.name)
            run(["chroot", str(root), "update-ca-certificates"])
        shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
        shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
        (root / "var/lib/apt/lists/partial").mkdir(parents=True)
        builder.import_rootfs(root, DEBIAN_IMAGE)
    say(f"{DEBIAN_IMAGE} made in {time.monotonic() - started:.0f} s")


def python_base(builder: Builder, report: Report) -> str:
    wanted = os.environ.get("PAGEMILL_PYTHON_IMAGE")
    if wanted:
        if not builder.pull(wanted):
            raise BuildError(f"PAGEMILL_PYTHON_IMAGE={wanted} is neither here nor pullable")
        return wanted
    if builder.pull(DEFAULT_PYTHON_IMAGE):
        return DEFAULT_PYTHON_IMAGE
    make_debian(builder)
    report.python_image_made_here = True
    report.notes.append(f"{DEFAULT_PYTHON_IMAGE} could not be pulled: the base was made here from Debian's "
                        f"packages ({DEBIAN_IMAGE} by debootstrap, python3 on top: {LOCAL_PYTHON_IMAGE})")
    build(builder, report, LOCAL_PYTHON_IMAGE, DOCKER / "base" / "python.Dockerfile",
          {"DEBIAN_IMAGE": DEBIAN_IMAGE}, base=DEBIAN_IMAGE, record=False)
    return LOCAL_PYTHON_IMAGE


def build(builder: Builder, report: Report, name: str, dockerfile: Path, build_args: dict[str, str], *,
          base: str, record: bool = True) -> str:
    """Builds `name:dev` unless an image of the same inputs is already here; returns the reference."""
    repo = name.split(":")[0]
    base_id = builder.image_id(base)
    if base_id is None:
        raise BuildError(f"base image {base} is missing")
    key = input_key(dockerfile, base_id, build_args)
    keyed, ref = f"{repo}:in-{key}", name if ":" in name else f"{name}:dev"
    started = time.monotonic()
    cached = builder.image_id(keyed) is not None
    if cached:
        say(f"{ref}: inputs unchanged ({keyed}), not rebuilt")
    else:
        builder.build(dockerfile, keyed, build_args)
    builder.tag(keyed, ref)
    builder.forget_older(repo, keyed)
    elapsed = round(time.monotonic() - started, 1)
    if record:
        report.images[repo] = Built(ref=ref, dockerfile=dockerfile.relative_to(REPO).as_posix(), key=key,
                                    size_mb=builder.size_mb(ref), build_s=elapsed, cached=cached)
        say(f"{ref}: {report.images[repo].size_mb} MB, {elapsed} s{' (cached)' if cached else ''}")
    return ref


def backing_images(builder: Builder, report: Report, python_image: str, force_standins: bool) -> None:
    """The compose file's Redis, PostgreSQL and MinIO where they can be pulled, else stand-ins built here."""
    for service, (official, dockerfile, variable) in BACKING.items():
        if not force_standins and builder.pull(official):
            report.backing[variable] = official
            continue
        ref = build(builder, report, f"pagemill-standin-{service}", DOCKER / dockerfile,
                    {"PYTHON_IMAGE": python_image}, base=python_image)
        report.backing[variable] = ref
        report.notes.append(f"{official} could not be pulled: {service} is the stand-in {ref} ({dockerfile})")


def try_lock(lock: IO[str]) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builder", default=os.environ.get("PAGEMILL_BUILDER", "auto"),
                        choices=["auto", "docker", "podman", "buildah"])
    parser.add_argument("--only", action="append", choices=sorted(PRODUCT), help="build only these images")
    parser.add_argument("--backing", action="store_true", help="also Redis / PostgreSQL / S3 for make test-deploy")
    parser.add_argument("--report", type=Path, default=REPORT)
    args = parser.parse_args(argv)
    lock_path = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pagemill" / "images.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = lock_path.open("w")
    if not try_lock(lock):
        say(f"another build holds {lock_path}: waiting for it (one build at a time on a shared machine)")
        fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        builder = Builder(pick_builder(args.builder))
        say(f"builder: {builder.tool}")
        report = Report(builder=builder.tool, python_image="", python_image_made_here=False)
        report.python_image = python_base(builder, report)
        for name, dockerfile in PRODUCT.items():
            if args.only and name not in args.only:
                continue
            build_args = {"PYTHON_IMAGE": report.python_image}
            if name == "pagemill-worker-gpu":  # its label names the vLLM sidecar release it speaks to
                build_args["VLLM_VERSION"] = (REPO / "VLLM_VERSION").read_text().strip()
            build(builder, report, name, DOCKER / dockerfile, build_args, base=report.python_image)
        if args.backing:
            backing_images(builder, report, report.python_image, os.environ.get("PAGEMILL_STANDINS") == "1")
    except BuildError as exc:
        print(f"images: {exc}", file=sys.stderr)
        return 1
    for note in report.notes:
        say(note)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(asdict(report), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
