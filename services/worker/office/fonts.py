"""The fonts LibreOffice may use: a fixed set from Debian packages, so a conversion does not depend on the host.

LibreOffice finds fonts through fontconfig. With the host's configuration, a document asking for Times New Roman
is laid out in whatever the host's rules pick among whatever the host has (DejaVu on one machine, Liberation or
Noto on the next), and so are the line breaks, the table widths and the words the page parser reads back. Every
conversion runs instead with `FONTCONFIG_FILE` pointing at a configuration of the worker's own that lists only
the files below and maps the families documents ask for to metric-compatible ones (Arial to Liberation Sans,
Calibri to Carlito, …). `make office-tools` and the worker image install the packages.

When a pinned file is missing, the conversion uses the host's fonts and says so once (`convert.fonts_missing`):
a result then depends on the host, as before, rather than every document failing.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from services.core.logging import get_logger

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class FontPackage:
    package: str  # the Debian package that installs the files
    folder: str
    files: tuple[str, ...]


def _styles(*families: str) -> tuple[str, ...]:
    return tuple(f"{family}-{style}.ttf" for family in families for style in ("Regular", "Bold", "Italic",
                                                                                 "BoldItalic"))


PINNED: tuple[FontPackage, ...] = (
    FontPackage("fonts-liberation2", "/usr/share/fonts/truetype/liberation2",
                _styles("LiberationSans", "LiberationSerif", "LiberationMono")),
    FontPackage("fonts-crosextra-carlito", "/usr/share/fonts/truetype/crosextra", _styles("Carlito")),
    FontPackage("fonts-crosextra-caladea", "/usr/share/fonts/truetype/crosextra", _styles("Caladea")),
    # Only the core package's six files: fonts-dejavu-extra puts its others (condensed, light, serif italic)
    # into the same folder.
    FontPackage("fonts-dejavu-core", "/usr/share/fonts/truetype/dejavu",
                ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf",
                 "DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf")),
    # LibreOffice's own symbol font (bullets, math), a dependency of libreoffice-core.
    FontPackage("fonts-opensymbol", "/usr/share/fonts/truetype/libreoffice", ("opens___.ttf",)),
)

# Families documents ask for, and the metric-compatible family that takes their place (same advance widths, so
# the same line breaks and page count as in the application that wrote the document).
SUBSTITUTES: dict[str, str] = {
    "Arial": "Liberation Sans", "Helvetica": "Liberation Sans", "Arimo": "Liberation Sans",
    "Times New Roman": "Liberation Serif", "Times": "Liberation Serif", "Tinos": "Liberation Serif",
    "Courier New": "Liberation Mono", "Courier": "Liberation Mono", "Cousine": "Liberation Mono",
    "Calibri": "Carlito", "Cambria": "Caladea",
}
# Families with no metric-compatible free font, sent to their generic family rather than to sans-serif.
KINDS: dict[str, tuple[str, ...]] = {
    "serif": ("Georgia", "Garamond", "Palatino Linotype", "Book Antiqua", "Constantia", "Century Schoolbook"),
    "monospace": ("Consolas", "Lucida Console", "Menlo", "Monaco", "Andale Mono"),
}
# The generic families, and where a family is unknown (Georgia, Segoe UI, …): each is followed by DejaVu, which
# has the glyphs the first lacks (Arabic, Hebrew, Armenian, Georgian, box drawing, …).
GENERIC: dict[str, tuple[str, ...]] = {
    "serif": ("Liberation Serif", "DejaVu Serif", "DejaVu Sans", "OpenSymbol"),
    "sans-serif": ("Liberation Sans", "DejaVu Sans", "OpenSymbol"),
    "monospace": ("Liberation Mono", "DejaVu Sans Mono", "DejaVu Sans", "OpenSymbol"),
}


def pinned_files() -> list[Path]:
    return [Path(package.folder) / name for package in PINNED for name in package.files]


def missing_packages() -> list[str]:
    """The Debian packages of pinned files that are not on this host."""
    return sorted({package.package for package in PINNED
                   if not all((Path(package.folder) / name).is_file() for name in package.files)})


def configuration() -> str:
    """The fontconfig file: only the pinned files, the substitutions, and the host's caches read (never written)."""
    folders = dict.fromkeys(package.folder for package in PINNED)
    lines = ['<?xml version="1.0"?>', '<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">', "<fontconfig>"]
    lines += [f"  <dir>{escape(folder)}</dir>" for folder in folders]
    # Every file of those folders is refused but the pinned ones (an accepted file wins over a refused one).
    lines += ["  <selectfont>", "    <acceptfont>"]
    lines += [f"      <glob>{escape(str(path))}</glob>" for path in pinned_files()]
    lines += ["    </acceptfont>", "    <rejectfont>"]
    lines += [f"      <glob>{escape(folder)}/*</glob>" for folder in folders]
    lines += ["    </rejectfont>", "  </selectfont>"]
    # The caches fc-cache built when the packages were installed; a cache of our own only when they are stale
    # (under the conversion's throwaway HOME).
    lines += ["  <cachedir>/var/cache/fontconfig</cachedir>", '  <cachedir prefix="xdg">fontconfig</cachedir>']
    for family, substitute in SUBSTITUTES.items():
        lines += [f'  <alias binding="same"><family>{escape(family)}</family>',
                  f"    <accept><family>{escape(substitute)}</family></accept></alias>"]
    for generic, members in KINDS.items():
        lines += [f"  <alias><family>{escape(family)}</family><default><family>{generic}</family></default></alias>"
                  for family in members]
    # A family that is not one of the generic ones is followed by sans-serif, as fontconfig's own 49-sansserif
    # rule does: an unknown family then falls back along the sans-serif list, never to an arbitrary font. (Rules
    # apply in file order: this one comes before the generic lists that expand what it appends.)
    lines += ['  <match target="pattern">']
    lines += [f'    <test qual="all" name="family" compare="not_eq"><string>{generic}</string></test>'
              for generic in GENERIC]
    lines += ['    <edit name="family" mode="append_last"><string>sans-serif</string></edit>', "  </match>"]
    for generic, families in GENERIC.items():
        preferred = "".join(f"<family>{escape(family)}</family>" for family in families)
        lines += [f"  <alias><family>{generic}</family><prefer>{preferred}</prefer></alias>"]
    lines += ["</fontconfig>", ""]
    return "\n".join(lines)


@functools.cache
def configuration_file() -> Path | None:
    """The pinned configuration written once per process (in the temporary directory, named by its content), or
    None when a pinned package is missing on this host: LibreOffice then sees the host's fonts."""
    missing = missing_packages()
    if missing:
        log.warning("convert.fonts_missing", packages=missing,
                    hint="make office-tools installs them; until then conversions use the host's fonts")
        return None
    text = configuration()
    path = Path(tempfile.gettempdir()) / f"pagemill-fonts-{hashlib.sha256(text.encode()).hexdigest()[:16]}.conf"
    if not path.is_file() or path.read_text() != text:
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text)
        partial.replace(path)  # atomic: another worker process may be reading it
    return path


def environment() -> dict[str, str]:
    """The variables a LibreOffice process needs to see only the pinned fonts (empty when they are missing)."""
    path = configuration_file()
    return {} if path is None else {"FONTCONFIG_FILE": str(path)}
