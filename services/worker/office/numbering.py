"""Word's list and heading numbering (a DOCX's `word/numbering.xml`): which levels are numbered, and the label
Word shows — "2.3." for a numbered heading or a multi-level item — from each level's counters.

A paragraph names a numbering (`numId`) and a level (`ilvl`); the numbering's abstract definition gives each
level its format (`decimal`, `lowerLetter`, `upperRoman`, `bullet`, …), its start and its text (`%1.%2.`: the
counters of levels 1 and 2). Counters run per numbering: a level counts up, and the levels under it start again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.etree import ElementTree

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
MAX_LEVELS = 9
_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
          (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))


@dataclass(frozen=True, slots=True)
class Level:
    format: str = "decimal"
    text: str = "%1."
    start: int = 1

    @property
    def numbered(self) -> bool:
        return self.format not in ("bullet", "none")


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _roman(number: int) -> str:
    out = []
    for value, letters in _ROMAN:
        while number >= value:
            out.append(letters)
            number -= value
    return "".join(out)


def formatted(number: int, style: str) -> str:
    """A counter as the level's format writes it."""
    if style in ("lowerLetter", "upperLetter"):
        letter = chr(ord("a") + (number - 1) % 26) * ((number - 1) // 26 + 1) if number > 0 else ""
        return letter.upper() if style == "upperLetter" else letter
    if style in ("lowerRoman", "upperRoman") and 0 < number < 4000:
        roman = _roman(number)
        return roman.upper() if style == "upperRoman" else roman
    return str(number)


@dataclass(slots=True)
class Numbering:
    """The document's numbering definitions and the counters of the paragraphs read so far."""

    levels: dict[str, dict[int, Level]] = field(default_factory=dict)  # numId → level → definition
    counters: dict[str, list[int]] = field(default_factory=dict)  # numId → each level's last number

    @classmethod
    def parse(cls, root: ElementTree.Element | None) -> Numbering:
        if root is None:
            return cls()
        abstract: dict[str, dict[int, Level]] = {}
        for definition in root.iterfind(f"{W}abstractNum"):
            abstract[definition.get(f"{W}abstractNumId", "")] = {
                _int(lvl.get(f"{W}ilvl"), 0): _level(lvl) for lvl in definition.iterfind(f"{W}lvl")}
        levels: dict[str, dict[int, Level]] = {}
        for num in root.iterfind(f"{W}num"):
            reference = num.find(f"{W}abstractNumId")
            own = dict(abstract.get(reference.get(f"{W}val", "") if reference is not None else "", {}))
            for override in num.iterfind(f"{W}lvlOverride"):
                level = _int(override.get(f"{W}ilvl"), 0)
                start = override.find(f"{W}startOverride")
                redefined = override.find(f"{W}lvl")
                if redefined is not None:
                    own[level] = _level(redefined)
                elif start is not None and level in own:
                    base = own[level]
                    own[level] = Level(base.format, base.text, _int(start.get(f"{W}val"), base.start))
            levels[num.get(f"{W}numId", "")] = own
        return cls(levels)

    def numbered(self, num_id: str, level: int) -> bool:
        definition = self.levels.get(num_id, {}).get(level)
        return definition is not None and definition.numbered

    def next_label(self, num_id: str, level: int) -> str:
        """Counts the paragraph at `level` of numbering `num_id` and returns the label Word shows for it ("" for a
        bullet)."""
        definitions = self.levels.get(num_id, {})
        level = max(0, min(level, MAX_LEVELS - 1))
        counters = self.counters.setdefault(num_id, [0] * MAX_LEVELS)
        for deeper in range(level + 1, MAX_LEVELS):
            counters[deeper] = 0
        for above in range(level):  # a level first used under an uncounted one counts from that one's start
            if counters[above] == 0:
                counters[above] = definitions.get(above, Level()).start
        definition = definitions.get(level, Level())
        counters[level] = counters[level] + 1 if counters[level] else definition.start
        if not definition.numbered:
            return ""
        label = definition.text
        for index in range(MAX_LEVELS):
            placeholder = f"%{index + 1}"
            if placeholder in label:
                label = label.replace(placeholder, formatted(counters[index], definitions.get(index, Level()).format))
        return label.strip()

    def counter(self, num_id: str, level: int) -> int:
        """The number `next_label` last gave the level."""
        return self.counters.get(num_id, [0] * MAX_LEVELS)[max(0, min(level, MAX_LEVELS - 1))]

    def multi_level(self, num_id: str, level: int) -> bool:
        """Whether the level's label shows more than its own counter ("1.2."), which nesting alone cannot say."""
        definition = self.levels.get(num_id, {}).get(level)
        return definition is not None and definition.numbered and definition.text.count("%") > 1


def _level(node: ElementTree.Element) -> Level:
    def value(name: str) -> str | None:
        found = node.find(f"{W}{name}")
        return found.get(f"{W}val") if found is not None else None

    return Level(format=value("numFmt") or "decimal", text=value("lvlText") or "", start=_int(value("start"), 1))
