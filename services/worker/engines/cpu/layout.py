"""Lines to blocks in reading order: paragraphs grouped, columns found by recursive cuts along white space,
running headers, footers and page numbers told apart from the body, headings and list items named."""

from __future__ import annotations

import re
import statistics

from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.model import Block, BlockKind, Line, union_all

_PAGE_NUMBER = re.compile(
    r"^[\W_]*(?:(?:page|p\.|pg\.?|seite|página|pagina)\s*)?(?:[A-Z]{1,2}-)?(?:\d{1,4}|[ivxlcdm]{1,7})"
    r"(?:\s*(?:of|/|de|von)\s*\d{1,4})?[\W_]*$", re.IGNORECASE)
_PAGE_OF = re.compile(r"\b(?:page|p\.|pg\.?)\s*\d{1,4}\s*(?:of|/)\s*\d{1,4}\b", re.IGNORECASE)
# Words a heading does not end on: a line that does is the start of a sentence set large.
_OPEN_ENDINGS = frozenset({"a", "an", "the", "of", "to", "in", "for", "from", "with", "and", "or", "by", "on", "at",
                           "as", "that", "which", "is", "are", "was", "were", "be", "than"})
_FURNITURE_HINT = re.compile(
    r"(https?://|www\.|\bdoi\b|©|\(c\)|copyright|all rights reserved|downloaded from|\bvol(?:ume)?\.?\s*\d|"
    r"\bissue\b|\bno\.\s*\d|\bpp?\.\s*\d|journal|proceedings|\|)", re.IGNORECASE)
_BULLET = re.compile(r"^(?:[•◦▪▫●○■□►▸‣⁃∙·\-–—*]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)]|\(?[ivxIVX]{1,4}[.)])\s+\S")
_BULLET_ONLY = re.compile(r"^[•◦▪▫●○■□►▸‣⁃∙·]$")
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\.?\s*{_MONTH}\s*,?\s*\d{{2,4}}"  # 15. Sep. 2023
    rf"|{_MONTH}\s*\d{{1,2}}(?:\s*[-–]\s*\d{{1,2}})?(?:st|nd|rd|th)?,?\s*\d{{4}}"  # February 23-26, 2015
    rf"|{_MONTH}\s*\d{{4}}|\d{{1,4}}[./-]\d{{1,2}}[./-]\d{{1,4}}|(?:19|20)\d{{2}})\b", re.IGNORECASE)
_DATE_LABEL = re.compile(r"\b(?:date[ds]?|dated|published|publication|revised|updated|issued|printed|effective|"
                         r"download(?:ed)?|as of|on)\b|[:,.()]", re.IGNORECASE)
_REVISION = re.compile(r"^(?:rev(?:ision)?(?:\.\s*|\s+)(?:[a-z]\b|[\w.-]*\d)"  # Rev. B, Revision 3.1
                       r"|(?:doc(?:ument)?|part|ref)\.?\s*(?:no\.?|number|#):?\s*[\w-]*\d"  # Doc. No. 4471
                       r"|p/n:?\s*[\w-]*\d|isbn\b|issn\b)", re.IGNORECASE)


def body_size(lines: list[Line]) -> float:
    """The font size most of the page's characters are set in."""
    weights: dict[float, int] = {}
    for line in lines:
        key = round(line.size * 2) / 2
        weights[key] = weights.get(key, 0) + len(line.text)
    return max(weights, key=lambda k: weights[k]) if weights else tuning.BODY_SIZE_DEFAULT


def group_blocks(lines: list[Line], size: float) -> list[Block]:
    """Vertically adjacent lines with the same style and overlapping extent become one block."""
    blocks: list[Block] = []
    open_blocks: list[Block] = []
    for line in sorted(lines, key=lambda item: (item.box.y0, item.box.x0)):
        target = None
        for block in reversed(open_blocks):
            last = block.lines[-1]
            gap = line.box.y0 - last.box.y1
            height = max(1.0, min(line.box.height, last.box.height))
            if gap > tuning.BLOCK_MAX_GAP * height or gap < -tuning.BLOCK_MAX_RISE * height:
                continue
            overlap = line.box.x_overlap(block.box)
            aligned = abs(line.box.x0 - block.box.x0) < tuning.BLOCK_ALIGN_TOLERANCE * height
            if overlap < tuning.BLOCK_MIN_X_OVERLAP * min(line.box.width, block.box.width) and not aligned:
                continue
            if overlap <= 0:
                continue
            if abs(line.size - last.size) > tuning.BLOCK_MAX_SIZE_CHANGE * max(line.size, last.size):
                continue
            if line.bold != last.bold and (len(block.lines) == 1 or _is_short(line, block)) \
                    and not _hangs_under_item(line, block):
                continue
            target = block
            break
        if target is None:
            target = Block([line], line.box)
            blocks.append(target)
            open_blocks.append(target)
            open_blocks = [b for b in open_blocks if line.box.y0 - b.box.y1 < tuning.BLOCK_OPEN_DISTANCE * size]
        else:
            target.lines.append(line)
            target.box = target.box.union(line.box)
    return [piece for block in blocks for piece in _split_at_wide_gaps(block)]


def _hangs_under_item(line: Line, block: Block) -> bool:
    """The line continues a list item: the block opens with a bullet and the line is indented under its text
    (an item whose first words are bold, "• IBM MT/ST: Introduced in 1964, ...")."""
    first = block.lines[0]
    return bool(_BULLET.match(first.text)) and line.box.x0 > first.box.x0 + 0.5 * first.box.height


def attach_bullets(lines: list[Line]) -> list[Line]:
    """A bullet set as a glyph of its own ("•" in another font, a hair lower) joins the line of text right of it
    on the same row, so the item starts with its marker instead of leaving an empty item behind."""
    bullets = [line for line in lines if len(line.words) == 1 and _BULLET_ONLY.match(line.words[0].text)]
    if not bullets:
        return lines
    merged: dict[int, Line] = {}
    used: set[int] = set()
    for bullet in bullets:
        height = max(1.0, bullet.box.height)
        beside = [line for line in lines if line is not bullet and id(line) not in used
                  and line.box.y_overlap(bullet.box) >= tuning.BULLET_MIN_Y_OVERLAP * min(height, line.box.height)
                  and 0 <= line.box.x0 - bullet.box.x1 <= tuning.BULLET_MAX_GAP * line.box.height]
        if not beside:
            continue
        text = min(beside, key=lambda line: line.box.x0)
        used.update((id(text), id(bullet)))
        merged[id(text)] = Line([*bullet.words, *text.words], bullet.box.union(text.box), text.rtl, text.score)
    return [merged.get(id(line), line) for line in lines if id(line) not in used or id(line) in merged]


def _split_at_wide_gaps(block: Block) -> list[Block]:
    """A block whose lines are evenly spaced except for a clearly wider gap is two blocks: a caption or a stamp
    that happened to sit close above a column ("Tobacco Control 2004;13:447" over the column's first line).

    A gap of a whole line or more is left alone: it usually means a line of this column went to another block
    (OCR lines beside a picture), and splitting there would scatter the column."""
    if len(block.lines) < tuning.SPLIT_MIN_LINES:
        return [block]
    gaps = [b.box.y0 - a.box.y1 for a, b in zip(block.lines, block.lines[1:], strict=False)]
    typical = statistics.median(gaps)
    height = statistics.median(line.box.height for line in block.lines)
    low, high = (max(tuning.SPLIT_GAP_FACTOR * typical, typical + tuning.SPLIT_GAP_MIN_EXTRA * height),
                 typical + tuning.SPLIT_GAP_MAX_EXTRA * height)
    pieces: list[list[Line]] = [[block.lines[0]]]
    for gap, line in zip(gaps, block.lines[1:], strict=True):
        if low < gap < high:
            pieces.append([line])
        else:
            pieces[-1].append(line)
    if len(pieces) == 1:
        return [block]
    return [Block(lines, union_all([line.box for line in lines]), block.kind) for lines in pieces]


def _is_short(line: Line, block: Block) -> bool:
    return line.box.width < tuning.BLOCK_SHORT_LINE * block.box.width


def reading_order(blocks: list[Block]) -> list[Block]:
    """Recursive XY-cut: split at vertical gutters first; strips that share a gutter stay together."""
    if len(blocks) <= 1:
        return list(blocks)
    columns = _split(blocks, vertical=True)
    if len(columns) > 1:
        return [b for column in columns for b in reading_order(column)]
    strips = _split(blocks, vertical=False)
    if len(strips) == 1:
        return sorted(blocks, key=lambda b: (b.box.y0, b.box.x0))
    merged: list[list[Block]] = [strips[0]]
    for strip in strips[1:]:
        if len(merged[-1]) > 1 and len(strip) > 1 and _shares_gutter(merged[-1], strip):
            merged[-1] = merged[-1] + strip
        else:
            merged.append(strip)
    if len(merged) == 1:
        return sorted(blocks, key=lambda b: (b.box.y0, b.box.x0))
    return [b for strip in merged for b in reading_order(strip)]


def _split(blocks: list[Block], *, vertical: bool) -> list[list[Block]]:
    """Groups of blocks separated by an empty band across the whole region (x bands when `vertical`)."""
    spans = sorted(((b.box.x0, b.box.x1) if vertical else (b.box.y0, b.box.y1), i) for i, b in enumerate(blocks))
    groups: list[list[Block]] = []
    end = float("-inf")
    min_gap = tuning.CUT_MIN_GUTTER if vertical else tuning.CUT_MIN_STRIP_GAP
    for (start, stop), index in spans:
        if not groups or start > end + min_gap:
            groups.append([])
        groups[-1].append(blocks[index])
        end = max(end, stop)
    return groups


def _gutters(blocks: list[Block]) -> list[tuple[float, float]]:
    spans = sorted((b.box.x0, b.box.x1) for b in blocks)
    gutters = []
    end = spans[0][1]
    for start, stop in spans[1:]:
        if start > end + tuning.CUT_MIN_GUTTER:
            gutters.append((end, start))
        end = max(end, stop)
    return gutters


def _shares_gutter(upper: list[Block], lower: list[Block]) -> bool:
    for a0, a1 in _gutters(upper):
        for b0, b1 in _gutters(lower):
            if min(a1, b1) > max(a0, b0):
                return True
    return False


def mark_furniture(blocks: list[Block], width: float, height: float, size: float) -> None:
    """Running headers, footers and page numbers: short, small or patterned text alone in the top or bottom
    margin band, with nothing but margin between it and the page edge."""
    if not blocks:
        return
    body = [b for b in blocks if b.kind != BlockKind.TABLE]
    # A bare page number is furniture wherever the page's content ends: it is the first or last block.
    ranked = sorted(blocks, key=lambda b: b.box.cy)
    for edge in (ranked[0], ranked[-1]):
        if edge.kind != BlockKind.TABLE and len(edge.lines) == 1 and _PAGE_NUMBER.match(edge.lines[0].text.strip()):
            edge.kind = BlockKind.FURNITURE
    for block in blocks:
        if block.kind == BlockKind.TABLE:
            continue
        text = " ".join(line.text for line in block.lines)
        # Tiny print (a slide's footer, a stamp) is furniture a little further from the edge.
        reach = tuning.FURNITURE_TINY_REACH if block.size < tuning.FURNITURE_TINY * size else 0.0
        top_band = block.box.y1 < (tuning.FURNITURE_TOP_BAND + reach) * height  # LNCS and other books set it low
        bottom_band = block.box.y0 > (tuning.FURNITURE_BOTTOM_BAND - reach) * height
        if not (top_band or bottom_band):
            continue
        if len(block.lines) > tuning.FURNITURE_MAX_LINES or len(text) > tuning.FURNITURE_MAX_CHARS:
            continue
        number = bool(_PAGE_NUMBER.match(text.strip()))
        hint = bool(_FURNITURE_HINT.search(text)) or bool(_PAGE_OF.search(text))
        # A date or revision line at the edge is furniture unless set as large as a title.
        dated = (is_date_line(text) or bool(_REVISION.match(text.strip()))) \
            and block.size < tuning.HEADING_LEVEL1_MIN_SIZE * size
        small = block.size < tuning.FURNITURE_SMALL * size
        big = block.size > tuning.FURNITURE_BIG * size
        # Nothing of the body between this block and the page edge.
        if top_band:
            outer = [b for b in body if b is not block and b.box.y1 <= block.box.y0 + 1]
        else:
            outer = [b for b in body if b is not block and b.box.y0 >= block.box.y1 - 1]
        outer_ok = all(_is_furniture_like(b, size) for b in outer)
        if not outer_ok:
            continue
        if number or dated or (hint and not big) or (small and len(text) < tuning.FURNITURE_SMALL_MAX_CHARS):
            block.kind = BlockKind.FURNITURE


def _is_furniture_like(block: Block, size: float) -> bool:
    return block.kind == BlockKind.FURNITURE or (len(block.lines) <= tuning.FURNITURE_LIKE_MAX_LINES
                                                  and block.size <= tuning.FURNITURE_BIG * size)


def classify(blocks: list[Block], size: float) -> list[Block]:
    """Headings from size and weight, list items split off at their markers, code from monospace fonts.

    A heading needs more than a bigger font: a short block whose words read like a heading (not a date, a
    revision line, a sentence or the middle of one), and not one of a stack of same-sized labels (a chart's
    axis). Glyph noise (a logo font's alphabet, "zyxwvuts") is furniture."""
    out: list[Block] = []
    for block in blocks:
        if block.kind not in (BlockKind.FURNITURE, BlockKind.TABLE) and _glyph_noise(_text(block)):
            block.kind = BlockKind.FURNITURE
    labels = _label_stacks(blocks, size)
    heading_sizes = sorted({round(b.size) for b in blocks if id(b) not in labels
                            and _heading_candidate(b, size) and b.size > tuning.HEADING_MIN_SIZE * size}, reverse=True)
    for block in blocks:
        if block.kind in (BlockKind.FURNITURE, BlockKind.TABLE):
            out.append(block)
            continue
        if id(block) not in labels and _heading_candidate(block, size):
            if block.size > tuning.HEADING_MIN_SIZE * size:
                block.kind = BlockKind.HEADING
                block.level = min(tuning.HEADING_MAX_LEVEL, 1 + heading_sizes.index(round(block.size))) if round(
                    block.size) in heading_sizes else 2
                if block.level == 1 and block.size < tuning.HEADING_LEVEL1_MIN_SIZE * size:
                    block.level = 2
                out.append(block)
                continue
            if all(line.bold for line in block.lines) and not block.lines[-1].text.rstrip().endswith((".", ",", ";")):
                block.kind = BlockKind.HEADING
                block.level = min(tuning.HEADING_MAX_LEVEL, len(heading_sizes) + 2)
                out.append(block)
                continue
        mono = sum(len(w.text) for line in block.lines for w in line.words if w.mono)
        total = sum(len(w.text) for line in block.lines for w in line.words)
        if total and mono > tuning.CODE_MIN_MONO * total and len(block.lines) >= tuning.CODE_MIN_LINES:
            block.kind = BlockKind.CODE
            out.append(block)
            continue
        out.extend(_split_list_items(block))
    return out


def _text(block: Block) -> str:
    return " ".join(line.text for line in block.lines)


def _heading_candidate(block: Block, size: float) -> bool:
    text = _text(block)
    return len(block.lines) <= tuning.HEADING_MAX_LINES and 1 < len(text) < tuning.HEADING_MAX_CHARS \
        and any(c.isalpha() for c in text) and not _BULLET.match(text) and plausible_heading(text)


def plausible_heading(text: str) -> bool:
    """Words that can head a section: not a date or a revision / part-number line, not a sentence (many words
    ending in a full stop), not the middle of one (opening in lower case, ending in a comma or a hyphen)."""
    text = text.strip()
    words = text.split()
    first = next((c for c in text if c.isalpha()), "")
    if first.islower() and not (len(words[0]) > 1 and words[0][1:2].isupper()):
        return False  # "of 55,000 housing units": a line of running text set larger ("tABLE 1." is not)
    if text.endswith((",", ";", "-", "\u2010")):
        return False
    if text.endswith(".") and len(words) > tuning.HEADING_SENTENCE_WORDS:
        return False
    if len(words) > 1 and words[-1] in _OPEN_ENDINGS:
        return False  # "In addition to the 349 participating schools from the"
    if _PAGE_NUMBER.match(text) or _PAGE_OF.search(text):
        return False  # "A-3", "Appendix 5 Page 8 of 11"
    return not _REVISION.match(text) and not is_date_line(text)


def is_date_line(text: str) -> bool:
    """A date with at most a label beside it ("Download date: 15. Sep. 2023", "Revised March 2, 2021")."""
    rest = _DATE_LABEL.sub(" ", _DATE.sub(" ", text))
    if rest == _DATE_LABEL.sub(" ", text):
        return False
    return sum(1 for word in rest.split() if any(c.isalpha() for c in word)) <= tuning.HEADING_DATE_MAX_WORDS


def _glyph_noise(text: str) -> bool:
    """A word that runs along the alphabet one way ("zyxwvuts", "abcdefg"): a logo or symbol font's glyph names,
    not text. Letters stepping back and forth are words ("non-optimal": n o n o p; a page of glpk's manual whose
    one paragraph held it went to furniture, its Markdown empty)."""
    for word in text.split():
        letters = [ord(c) for c in word.lower() if c.isalpha()]
        run, step = 1, 0
        for a, b in zip(letters, letters[1:], strict=False):
            if abs(b - a) == 1:
                run, step = (run + 1, step) if b - a == step else (2, b - a)
            else:
                run, step = 1, 0
            if run >= tuning.GLYPH_RUN_LETTERS:
                return True
    return False


def _label_stacks(blocks: list[Block], size: float) -> set[int]:
    """Ids of blocks in runs of `HEADING_LABEL_RUN` or more consecutive short one-line blocks of one size, larger
    than the body or bold, with nothing between them: the labels of a chart's axis or a diagram, not a row of
    headings."""
    labels: set[int] = set()
    run: list[Block] = []

    def close() -> None:
        if len(run) >= tuning.HEADING_LABEL_RUN:
            labels.update(id(b) for b in run)
        run.clear()

    for block in blocks:
        short = (block.kind not in (BlockKind.FURNITURE, BlockKind.TABLE) and len(block.lines) == 1
                 and len(_text(block)) <= tuning.LABEL_MAX_CHARS
                 and (block.size > tuning.HEADING_MIN_SIZE * size or block.lines[0].bold))
        if short and run and round(block.size) == round(run[-1].size):
            run.append(block)
            continue
        close()
        if short:
            run.append(block)
    close()
    return labels


def _split_list_items(block: Block) -> list[Block]:
    starts = [i for i, line in enumerate(block.lines) if _BULLET.match(line.text) or _BULLET_ONLY.match(
        line.words[0].text)]
    if not starts:
        return [block]
    pieces: list[Block] = []
    bounds = ([0] if starts[0] != 0 else []) + starts + [len(block.lines)]
    for begin, end in zip(bounds, bounds[1:], strict=False):
        lines = block.lines[begin:end]
        if not lines:
            continue
        kind = BlockKind.LIST_ITEM if begin in starts else block.kind
        pieces.append(Block(lines, union_all([line.box for line in lines]), kind))
    return pieces
