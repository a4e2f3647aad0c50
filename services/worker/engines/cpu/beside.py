"""Text blocks side by side, line for line, read in another order than the page's producer wrote them, or apart.

A reference card whose entries pair a sentence with its syntax (asymptote's: "number of segments in path p" beside
`length(p)`) can come out of the layout as a paragraph of every description beside a `code` block of every syntax:
each word is right, nothing in the boxes looks wrong, and the reading is lost. Where two blocks stand side by side and
the lines of one sit on the other's baselines, the text layer's producer tells the two apart: a two-column page is
written down each column, as it is read (its runs change block once, where the reading does); a card is written
entry by entry, across the two blocks, and read down them nearly every jump changes block (`crossings`). Only a
text-layer page has a producer's order (`PageText.runs`); the check of a table's order is `pagecolumns`'. A page read
by OCR has none (the detector's lines run across every column), so there the pair's shape tells (`entry_readings`):
one block of lines a word or two long beside one of sentences, line for line, is entries read apart; two columns of
prose, or of single words, are not."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import median

from services.core.elements import BBox, Element, ElementType
from services.worker.engines.base import PageWord
from services.worker.engines.cpu import pagecolumns, tuning
from services.worker.engines.geometry import bbox_union

TEXT_BLOCKS = frozenset({ElementType.PARAGRAPH, ElementType.LIST, ElementType.CODE})


@dataclass(frozen=True, slots=True)
class PageBesides:
    """The page's text blocks that stand beside another line for line (`beside_readings`: the words of each, by
    element id), the producer's jumps from one of their runs to the next, how many of those the reading, block by
    block, does not read on (`crossed`), and the page's words (furniture left out)."""

    block_words: dict[str, int]
    jumps: int
    crossed: int
    words: int

    @property
    def asked(self) -> bool:
        """Enough jumps to tell: at least `tuning.BESIDE_ORDER_MIN_JUMPS`."""
        return self.jumps >= tuning.BESIDE_ORDER_MIN_JUMPS

    @property
    def disorder(self) -> float:
        """Share of the jumps not read on; 0 where not `asked`."""
        return round(self.crossed / self.jumps, 4) if self.asked else 0.0

    @property
    def disordered(self) -> bool:
        return self.disorder >= tuning.BESIDE_ORDER_MIN_DISORDER

    def signals(self) -> dict[str, float]:
        """`beside_order_disorder` and `beside_order_share` (the share of the page's words in those blocks when
        they are disordered, 0 otherwise), where they were asked."""
        if not self.asked:
            return {}
        held = sum(self.block_words.values()) if self.disordered else 0
        share = round(min(1.0, held / self.words), 4) if self.words else 0.0
        return {"beside_order_disorder": self.disorder, "beside_order_share": share}

    def penalties(self) -> dict[str, float]:
        """What each of those blocks takes off its own confidence when they are disordered, by element id: the
        reading order was lost there, so a reviewer is sent to it."""
        return dict.fromkeys(self.block_words, tuning.BESIDE_ORDER_PENALTY) if self.disordered else {}


def beside_readings(tree: Sequence[Element], words: Sequence[PageWord],
                    runs: Sequence[tuple[str, BBox]]) -> PageBesides:
    """The page's text blocks (`TEXT_BLOCKS`) that stand beside another line for line (`side_by_side`), or inside
    another's box beside its lines (`_aside`: a paragraph that took in the sentence above a list of syntax and their
    descriptions spans the syntax's block), with the producer's jumps between their runs and how many of them a
    reading block by block does not read on (`crossings`). `runs`: the text layer's runs in content order, each its
    text and box (`PageText.runs`); none, nothing is asked."""
    nothing = PageBesides({}, 0, 0, 0)
    if not runs:
        return nothing
    blocks = _text_blocks(tree)
    boxes = [box for text, box in runs if text.strip()]
    held: dict[str, list[int]] = {element_id: [] for element_id in blocks}
    for n, box in enumerate(boxes):
        owner = _owner(box, blocks)
        if owner is not None:
            held[owner].append(n)
    asked: set[str] = set()
    for left, left_box in blocks.items():
        for right, right_box in blocks.items():
            ours, theirs = [boxes[n] for n in held[left]], [boxes[n] for n in held[right]]
            if left != right and ((_beside(left_box, right_box) and side_by_side(ours, theirs))
                                  or (_holds(left_box, right_box) and _aside(theirs, ours))):
                asked.update((left, right))
    if not asked:
        return nothing
    jumps, crossed = crossings({element_id: held[element_id] for element_id in asked})
    content = pagecolumns.content_boxes(tree, words)
    owners = [_owner(box, blocks) for box in content]
    block_words = {element_id: owners.count(element_id) for element_id in asked}
    return PageBesides(block_words, jumps, crossed, len(content))


def _text_blocks(tree: Sequence[Element], frame: Callable[[BBox], BBox] | None = None) -> dict[str, BBox]:
    """The page's boxed `TEXT_BLOCKS` that hold text, their boxes by element id, through `frame` where given."""
    framed = frame or (lambda box: box)
    return {e.id: framed(e.bbox) for e in tree if e.type in TEXT_BLOCKS and e.bbox is not None and e.text.strip()}


def _owner(box: BBox, blocks: Mapping[str, BBox]) -> str | None:
    """The block a run or word belongs to: the one whose box holds its centre, or of several, the innermost where
    their boxes nest (a paragraph that took in the sentence above a list spans the code block beside its lines);
    a run in two boxes that do not nest (overlapping blocks) is nobody's."""
    owners = sorted((element_id for element_id, area in blocks.items() if pagecolumns.inside(box, area)),
                    key=lambda element_id: _area(blocks[element_id]))
    if not owners or not all(_holds(blocks[outer], blocks[owners[0]]) for outer in owners[1:]):
        return None
    return owners[0]


def _area(box: BBox) -> float:
    return (box[2] - box[0]) * (box[3] - box[1])


def _holds(outer: BBox, inner: BBox) -> bool:
    """`inner` lies within `outer` (and is not the same box)."""
    return (outer != inner and outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2]
            and inner[3] <= outer[3])


def _aside(inner: Sequence[BBox], outer: Sequence[BBox]) -> bool:
    """A block inside another's box stands beside the other's lines: it holds at least `tuning.BESIDE_MIN_LINES`
    runs, and `tuning.BESIDE_MIN_PAIRED` of them have a run of the other on their line, all on one side of them."""
    if len(inner) < tuning.BESIDE_MIN_LINES:
        return False
    right = sum(any(_on_one_line(a, b) and b[0] >= a[2] for b in outer) for a in inner)
    left = sum(any(_on_one_line(a, b) and b[2] <= a[0] for b in outer) for a in inner)
    return max(right, left) >= tuning.BESIDE_MIN_PAIRED * len(inner)


def crossings(held: Mapping[str, Sequence[int]]) -> tuple[int, int]:
    """The jumps from one run to the next among the blocks' runs in content order (`held`: each block's runs, by
    their places in it), and how many of them go from one block to another beyond the ones a reading of each block
    whole, one after another, makes (one fewer than the blocks): a two-column page written down its columns has
    none; a card written entry by entry, description then syntax, read as a block of each, has nearly all."""
    owner = sorted((n, element_id) for element_id, places in held.items() for n in places)
    changes = sum(a != b for (_, a), (_, b) in zip(owner, owner[1:], strict=False))
    return len(owner) - 1, max(0, changes - (len(held) - 1))


def _beside(left: BBox, right: BBox) -> bool:
    """`right` starts where `left` ends, or after it, and the two share most of the shorter one's height."""
    if right[0] < left[2] - tuning.BESIDE_MAX_OVERLAP * min(left[2] - left[0], right[2] - right[0]):
        return False
    shared = min(left[3], right[3]) - max(left[1], right[1])
    return shared >= tuning.BESIDE_MIN_HEIGHT_SHARE * min(left[3] - left[1], right[3] - right[1])


def side_by_side(ours: Sequence[BBox], theirs: Sequence[BBox]) -> bool:
    """Both blocks hold at least `tuning.BESIDE_MIN_LINES` runs, and `tuning.BESIDE_MIN_PAIRED` of the runs of the
    one with fewer sit on a line of the other's (sharing half the shorter run's height): lines side by side, as a
    card's descriptions and their syntax, or the two columns of a page set on one line pitch."""
    if min(len(ours), len(theirs)) < tuning.BESIDE_MIN_LINES:
        return False
    fewer, more = sorted((ours, theirs), key=len)
    on = sum(any(_on_one_line(a, b) for b in more) for a in fewer)
    return on >= tuning.BESIDE_MIN_PAIRED * len(fewer)


def _on_one_line(a: BBox, b: BBox) -> bool:
    """The two boxes share half the shorter one's height."""
    return min(a[3], b[3]) - max(a[1], b[1]) >= 0.5 * min(a[3] - a[1], b[3] - b[1])


def beside_order_penalty(signals: Mapping[str, float]) -> float:
    """What text blocks side by side read in another order than their producer wrote them take off the page's
    confidence (after the table-order penalty), per unit of the share of the page's words they hold
    (`beside_order_share`)."""
    return tuning.BESIDE_ORDER_PENALTY * signals.get("beside_order_share", 0.0)


@dataclass(frozen=True, slots=True)
class PageEntries:
    """The text blocks of a page read without a producer's order (by OCR) that stand beside another line for line,
    one of them of lines a word or two long beside one of sentences (`entry_readings`: the words of each, by element
    id), and the page's words (furniture left out)."""

    block_words: dict[str, int]
    words: int

    def signals(self) -> dict[str, float]:
        """`beside_entries_share`: the share of the page's words in those blocks."""
        held = sum(self.block_words.values())
        return {"beside_entries_share": round(min(1.0, held / self.words), 4) if self.words else 0.0}

    def penalties(self) -> dict[str, float]:
        """What each of those blocks takes off its own confidence: an entry's two parts were read apart."""
        return dict.fromkeys(self.block_words, tuning.BESIDE_ENTRIES_PENALTY)


def entry_readings(tree: Sequence[Element], words: Sequence[PageWord],
                   frame: Callable[[BBox], BBox] | None = None) -> PageEntries:
    """The page's text blocks (`TEXT_BLOCKS`) that stand beside another line for line (`side_by_side`, over their
    lines) where one of the two is of entries a word or two long (its median line at most `tuning.ENTRY_MAX_WORDS`
    words, most of them with a letter: not line numbers or page numbers) and the other of sentences (its median line
    at least `tuning.ENTRY_MIN_SENTENCE_WORDS` words and `tuning.ENTRY_WORDS_RATIO` times the other's): a card's
    descriptions beside their syntax, a form's labels beside their values, read as two blocks. A page of two columns
    of prose, or of lists of single words, has no such pair.
    `frame`: the frame the page was read in (`pagecolumns.content_boxes`')."""
    blocks = _text_blocks(tree, frame)
    content = pagecolumns.content_words(tree, words, frame)
    held: dict[str, list[PageWord]] = {element_id: [] for element_id in blocks}
    for word in content:
        owners = [element_id for element_id, area in blocks.items() if pagecolumns.inside(word.bbox, area)]
        if len(owners) == 1:
            held[owners[0]].append(word)
    lines = {element_id: _lines(placed) for element_id, placed in held.items()}
    paired: set[str] = set()
    for left, left_box in blocks.items():
        for right, right_box in blocks.items():
            if (left != right and lines[left] and lines[right] and _beside(left_box, right_box)
                    and _entries(lines[left], lines[right])):
                paired.update((left, right))
    return PageEntries({element_id: len(held[element_id]) for element_id in paired}, len(content))


def _entries(ours: Sequence[Line], theirs: Sequence[Line]) -> bool:
    """One of two blocks' lines are a word or two each, most with a letter, and the other's sentences of several
    times as many words, line for line."""
    (short, short_lines), (long, _) = sorted(((median(len(line.words) for line in lines), lines)
                                              for lines in (ours, theirs)), key=lambda pair: pair[0])
    lettered = sum(any(c.isalpha() for c in word) for line in short_lines for word in line.words)
    return (short <= tuning.ENTRY_MAX_WORDS
            and long >= max(tuning.ENTRY_MIN_SENTENCE_WORDS, tuning.ENTRY_WORDS_RATIO * short)
            and lettered > 0.5 * sum(len(line.words) for line in short_lines)
            and side_by_side([line.box for line in ours], [line.box for line in theirs]))


@dataclass(frozen=True, slots=True)
class Line:
    """A block's words on one line: its box and the words' texts."""

    box: BBox
    words: tuple[str, ...]


def _lines(words: Sequence[PageWord]) -> list[Line]:
    """Words gathered into lines, top to bottom: each word joins the first line whose box shares half the shorter
    one's height with it."""
    found: list[Line] = []
    for word in sorted(words, key=lambda w: (w.bbox[1] + w.bbox[3]) / 2):
        box = word.bbox
        for n, line in enumerate(found):
            if _on_one_line(line.box, box):
                found[n] = Line(bbox_union((line.box, box)), (*line.words, word.text))
                break
        else:
            found.append(Line(box, (word.text,)))
    return found


def beside_entries_penalty(signals: Mapping[str, float]) -> float:
    """What entries read apart from the sentences beside them take off the page's confidence, per unit of
    the share of the page's words they and those sentences hold (`beside_entries_share`)."""
    return tuning.BESIDE_ENTRIES_PENALTY * signals.get("beside_entries_share", 0.0)
