"""The fonts conversions are pinned to (services/worker/office/fonts.py) are the ones the project installs:
`make office-tools` on a host, the worker image in production. A font added to the pinned set but to neither
would make every conversion fall back to the host's fonts there."""

from __future__ import annotations

import re
from xml.etree import ElementTree

from services.worker.office import fonts
from tests.observability import REPO


def test_make_office_tools_and_the_worker_image_install_every_pinned_package() -> None:
    pinned = {package.package for package in fonts.PINNED}
    makefile = re.search(r"^OFFICE_FONTS := (.+)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert makefile is not None and set(makefile.group(1).split()) == pinned
    image = (REPO / "docker" / "worker.Dockerfile").read_text().replace("\\\n", " ")
    installs = " ".join(line for line in image.splitlines() if "libreoffice-core-nogui" in line)
    assert pinned <= set(installs.split()), pinned - set(installs.split())


def test_the_configuration_lists_only_the_pinned_files_and_maps_the_office_families() -> None:
    root = ElementTree.fromstring(fonts.configuration().split("\n", 2)[2])  # past the XML and DOCTYPE lines
    assert root.find("include") is None  # nothing of the host's configuration (conf.d) comes in
    accepted = [glob.text for glob in root.iterfind("selectfont/acceptfont/glob")]
    assert accepted == [str(path) for path in fonts.pinned_files()]
    refused = {glob.text for glob in root.iterfind("selectfont/rejectfont/glob")}
    assert refused == {f"{folder}/*" for folder in {package.folder for package in fonts.PINNED}}
    aliases = {alias.findtext("family"): alias.findtext("accept/family") for alias in root.iterfind("alias")
               if alias.find("accept") is not None}
    assert aliases["Arial"] == "Liberation Sans" and aliases["Calibri"] == "Carlito"
    assert aliases["Times New Roman"] == "Liberation Serif" and aliases["Cambria"] == "Caladea"
