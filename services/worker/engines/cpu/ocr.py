"""Scanned pages and images through RapidOCR (PP-OCRv6, shipped in the wheel): page orientation first, then one
recognition pass, giving the same `Line`s the text layer gives, each word where the recognizer read it and with the
box its own ink fills (for the page's word list), so layout and tables work on both (and a second reading of a few
lines' shrunk crops, `rescale_agreement`, for the page's confidence signals)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

import numpy as np
from PIL import Image, ImageFilter

from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.model import Box, Line, Word

_lock = threading.Lock()
_ocr: Any = None

# Detection runs on a copy no longer than this; recognition crops come from the full-resolution page.
DETECT_SIDE = 1280
MIN_SCORE = 0.5


def get_ocr() -> Any:
    """One RapidOCR per process: loading the models takes a second and ~100 MB."""
    global _ocr
    with _lock:
        if _ocr is None:
            from rapidocr import RapidOCR

            _ocr = RapidOCR(params={
                "Global.log_level": "error",
                "Global.max_side_len": tuning.OCR_MAX_SIDE_LEN,
                "Global.return_word_box": True,  # each character's column in the recognizer's output: `_line`
                "Det.limit_type": "max",
                "Det.limit_side_len": DETECT_SIDE,
            })
        return _ocr


@dataclass(slots=True)
class OcrPage:
    lines: list[Line] = field(default_factory=list)
    rotation: int = 0  # clockwise degrees the page image was turned to read it
    width: int = 0
    height: int = 0
    scores: list[float] = field(default_factory=list)
    boxes_found: int = 0
    turns_tried: int = 1  # 4 when the first reading was doubtful and every turn was read
    skew: float = 0.0  # degrees: width-weighted median tilt of the read lines' boxes (a skewed scan)
    rescale_agreement: float = 1.0  # the read lines against a second reading of their crops shrunk
    rescale_lines: int = 0  # lines that second reading compared (0: none, agreement 1)


def quad_size(quad: np.ndarray) -> tuple[float, float]:
    width = float(np.linalg.norm(quad[1] - quad[0]))
    height = float(np.linalg.norm(quad[2] - quad[1]))
    return width, height


def needs_quarter_turn(quads: list[np.ndarray]) -> bool:
    """Text lines standing upright (taller than wide) on most of the page: the page lies on its side."""
    sized = [quad_size(q) for q in quads]
    sized = [(w, h) for w, h in sized if max(w, h) > tuning.OCR_ORIENTATION_MIN_SIDE]
    if len(sized) < 2:
        return False
    tall = sum(max(w, h) for w, h in sized if h > tuning.OCR_ORIENTATION_ASPECT * w)
    wide = sum(max(w, h) for w, h in sized if w > tuning.OCR_ORIENTATION_ASPECT * h)
    return tall > wide


def upside_down_vote(labels: list[tuple[str, float]]) -> bool:
    """The line classifier's votes, weighted by confidence: is the page upside down?"""
    flipped = sum(score for label, score in labels if label == "180")
    upright = sum(score for label, score in labels if label == "0")
    return flipped > upright


def _detect(ocr: Any, image: np.ndarray) -> list[np.ndarray]:
    result = ocr(image, use_cls=False, use_rec=False)
    boxes = getattr(result, "boxes", None)
    if boxes is None:
        return []
    return [np.asarray(b, dtype=np.float32) for b in boxes]


def _sample(quads: list[np.ndarray], count: int) -> list[np.ndarray]:
    return sorted(quads, key=lambda q: -quad_size(q)[0])[:count]


def read_image(image: np.ndarray, *, try_turns: bool = True, rescale_lines: int = 0) -> OcrPage:
    """Orientation (0/90/180/270) from the detected lines' shapes and the line classifier, then recognition;
    `rescale_lines` > 0: that many of the read lines are read a second time (`rescale_agreement`).

    When that reading is doubtful (a low mean score, most detected boxes unread, or none read), the other three
    turns are detected and their widest boxes read, and the turn whose recognition is surest wins: a single
    guess from box shapes and a classifier turns a table image upside down or misses a small rotated line.
    """
    ocr = get_ocr()
    rotation = 0
    quads = _detect(ocr, image)
    if quads and needs_quarter_turn(quads):
        image = np.ascontiguousarray(np.rot90(image, k=-1))  # 90 degrees clockwise
        rotation = 90
        quads = _detect(ocr, image)
    if quads:
        sample = ocr.crop_text_regions(image, _sample(quads, tuning.OCR_ORIENTATION_SAMPLE))
        _, classified = ocr.cls_and_rotate(sample)
        if upside_down_vote(list(classified.cls_res or [])):
            image = np.ascontiguousarray(np.rot90(image, k=2))
            height, width = image.shape[:2]
            quads = [np.array([[width - x, height - y] for x, y in q[[2, 3, 0, 1]]], dtype=np.float32)
                     for q in quads]
            rotation = (rotation + 180) % 360
    best = _recognize(ocr, image, quads, rotation, rescale_lines)
    if not try_turns or not is_doubtful(best):
        return best
    # Each other turn is detected and its widest boxes read; only a turn that wins is read in full.
    upright = np.ascontiguousarray(np.rot90(image, k=rotation // 90))  # back to the image as given
    winner: tuple[int, np.ndarray, list[np.ndarray]] | None = None
    best_strength = _sample_strength(ocr, image, quads)
    for turn in (0, 90, 180, 270):
        if turn == rotation:
            continue
        turned = np.ascontiguousarray(np.rot90(upright, k=-turn // 90))
        turned_quads = _detect(ocr, turned)
        strength = _sample_strength(ocr, turned, turned_quads)
        if strength > best_strength * tuning.OCR_TURN_MIN_GAIN:
            winner, best_strength = (turn, turned, turned_quads), strength
    if winner is not None:
        best = _recognize(ocr, winner[1], winner[2], winner[0], rescale_lines)
    best.turns_tried = 4
    return best


def _sample_strength(ocr: Any, image: np.ndarray, quads: list[np.ndarray]) -> float:
    """The reading strength of a turn's widest boxes: enough to tell a readable turn from an unreadable one."""
    sample = _sample(quads, tuning.OCR_TURN_SAMPLE)
    if not sample:
        return 0.0
    recognized = ocr.recognize_txt(ocr.crop_text_regions(image, sample))
    return sum(float(score) * len(str(text).strip())
               for text, score in zip(recognized.txts or (), recognized.scores or (), strict=False)
               if float(score) >= MIN_SCORE)


def reading_strength(page: OcrPage) -> float:
    """How sure a reading is as a whole: recognition scores weighted by characters read."""
    return sum(score * len(line.text) for score, line in zip(page.scores, page.lines, strict=False))


def is_doubtful(page: OcrPage) -> bool:
    """A reading worth checking against the other turns of the page."""
    if page.boxes_found == 0:
        return False  # nothing looked like text: a blank page or a picture, not a turned one
    if not page.scores:
        return True
    weights = [max(1, len(line.text)) for line in page.lines]
    mean = sum(s * w for s, w in zip(page.scores, weights, strict=False)) / sum(weights)
    kept = len(page.scores) / page.boxes_found
    return mean < tuning.OCR_DOUBTFUL_MEAN_SCORE or kept < tuning.OCR_DOUBTFUL_KEPT


def _recognize(ocr: Any, image: np.ndarray, quads: list[np.ndarray], rotation: int,
                rescale_lines: int = 0) -> OcrPage:
    page = OcrPage(width=image.shape[1], height=image.shape[0], rotation=rotation, boxes_found=len(quads))
    if not quads:
        return page
    quads = sorted(quads, key=lambda q: (float(q[:, 1].min()), float(q[:, 0].min())))
    crops = ocr.crop_text_regions(image, quads)
    recognized = ocr.recognize_txt(crops)
    paper = _smoothed(image)
    tilts: list[tuple[float, float]] = []
    kept: list[tuple[np.ndarray, str]] = []
    placed = recognized.word_results or [None] * len(quads)
    for quad, crop, text, score, info in zip(quads, crops, recognized.txts or (), recognized.scores or (), placed,
                                             strict=False):
        text = str(text).strip()
        if not text or float(score) < MIN_SCORE:
            continue
        page.scores.append(float(score))
        page.lines.append(_line(quad, text, float(score), info, paper))
        tilts.append((quad_tilt(quad), quad_size(quad)[0]))
        kept.append((crop, text))
    _even_ink(page.lines)
    page.skew = _weighted_median(tilts)
    if rescale_lines > 0:
        page.rescale_agreement, page.rescale_lines = rescale_agreement(ocr, kept, sample=rescale_lines)
    return page


def rescale_agreement(ocr: Any, read: Sequence[tuple[np.ndarray, str]], height: int = tuning.OCR_RESCALE_HEIGHT,
                      sample: int = tuning.OCR_RESCALE_SAMPLE) -> tuple[float, int]:
    """How well the recognizer's reading of some lines survives their crops shrunk to `height` pixels: the
    character similarity of the two readings, weighted by line length (1: the same text), and the lines compared.

    Only the recognizer runs again, on at most `sample` crops the first pass already cut, of
    lines near `tuning.OCR_RESCALE_TARGET_CHARS` long (the recognizer's cost grows with a crop's width). A crisp
    line still reads the same at that height; a blurred or coarse one, whose first reading was already a guess the
    recognizer scored high, turns into another guess. A crop no taller than `height` is not read again (the same
    pixels read the same) and counts as agreeing: a fixed factor would halve small crisp text below legibility.
    No line read: (1.0, 0), nothing to doubt."""
    chosen = _rescale_sample(read, sample)
    if not chosen:
        return 1.0, 0
    shrunk = [index for index, (crop, _) in enumerate(chosen) if crop.shape[0] > height]
    second = {index: str(chosen[index][1]) for index in range(len(chosen))}
    if shrunk:
        again = ocr.recognize_txt([_scaled(chosen[index][0], height / chosen[index][0].shape[0]) for index in shrunk])
        for index, text in zip(shrunk, again.txts or ("",) * len(shrunk), strict=False):
            second[index] = str(text).strip()
    total = 0.0
    agreeing = 0.0
    for index, (_, text) in enumerate(chosen):
        weight = len(text)
        total += weight
        agreeing += weight * char_similarity(text, second[index])
    return (round(agreeing / total, 4) if total else 1.0), len(chosen)


def _rescale_sample(read: Sequence[tuple[np.ndarray, str]], count: int) -> list[tuple[np.ndarray, str]]:
    lines = [item for item in read if len(item[1]) >= tuning.OCR_RESCALE_MIN_CHARS]
    lines.sort(key=lambda item: abs(len(item[1]) - tuning.OCR_RESCALE_TARGET_CHARS))  # stable: reading order
    return lines[:count]


def char_similarity(first: str, second: str) -> float:
    """Character-level similarity of two readings of one line, 0..1 (difflib's ratio)."""
    if not first and not second:
        return 1.0
    return SequenceMatcher(None, first, second, autojunk=False).ratio()


def _scaled(crop: np.ndarray, scale: float) -> np.ndarray:
    height, width = crop.shape[:2]
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    # BOX: each new pixel the mean of those it covers, as a coarser scan would see them
    resample = Image.Resampling.BOX if scale < 1 else Image.Resampling.BICUBIC
    return np.asarray(Image.fromarray(crop).resize(size, resample))


def quad_tilt(quad: np.ndarray) -> float:
    """Absolute angle in degrees of a detected box's top edge against the horizontal (0 for a level line)."""
    dx, dy = (float(v) for v in quad[1] - quad[0])
    angle = abs(np.degrees(np.arctan2(dy, dx))) if dx or dy else 0.0
    return float(min(angle, 180.0 - angle))


def _weighted_median(values: list[tuple[float, float]]) -> float:
    total = sum(weight for _, weight in values)
    if total <= 0:
        return 0.0
    seen = 0.0
    for value, weight in sorted(values):
        seen += weight
        if seen >= total / 2:
            return round(value, 2)
    return 0.0


def _line(quad: np.ndarray, text: str, score: float, placed: Any = None, paper: np.ndarray | None = None) -> Line:
    """A detected box's words, each where the recognizer read its characters (`placed`: RapidOCR's `WordInfo`,
    the output column of every character); without it, or when its characters are not the text's, each word
    takes its share of the box by character count. The columns keep a gap the detector's box spans (a label and
    its value at a tab stop read as one box) where it is on the page; character shares spread the words over it.

    With the page's grey pixels (`paper`, `_smoothed`) each word also gets its `ink` (`_ink_spans`): its inked
    columns, and the band of rows its line's ink fills, which `_even_ink` turns into the page's height once every
    line is read. The detector pads its boxes by a third of their height or more and the columns by half a
    character, so gaps between words and word heights measured on `box` come out narrower and taller than the
    page's. Layout keeps `box`."""
    box = Box(float(quad[:, 0].min()), float(quad[:, 1].min()), float(quad[:, 0].max()), float(quad[:, 1].max()))
    tokens = text.split()
    size = box.height * tuning.OCR_SIZE_PER_HEIGHT
    spans = _read_spans(box, tokens, placed) or _share_spans(box, tokens)
    inked = _ink_spans(paper, box, spans) if paper is not None and quad_tilt(quad) <= tuning.OCR_INK_MAX_TILT else None
    words = [Word(token, Box(start, box.y0, stop, box.y1), size=size)
             for token, (start, stop) in zip(tokens, spans, strict=True)]
    if inked is not None:
        (top, bottom), ink = inked
        for word, (start, stop) in zip(words, ink, strict=True):
            word.ink = Box(start, top, stop, bottom)
    return Line(words, box, score=score)


def _even_ink(lines: Sequence[Line]) -> None:
    """Every word's `ink` as tall as its line's box times the share of a box the ink of the page's lines of text
    fills (the median over lines of at least `tuning.OCR_INK_SHARE_MIN_CHARS` characters, half of them letters),
    about the box's centre; across, the word's inked columns (`_ink_spans`), or its span where none were measured
    (a tilted box). One line's own band depends on its letters (a line of figures or of x-height letters fills
    half of what one with ascenders and descenders does) and would read as a size, and a word without a measure
    beside measured ones would stand a third taller; the detector's padding is about the same share of every box
    of a page. No such line measured: every word's `ink` is its inked columns at its box's height."""
    shares = sorted(line.words[0].ink.height / line.box.height for line in lines
                    if line.words and line.words[0].ink is not None and line.box.height > 0
                    and len(text := line.text) >= tuning.OCR_INK_SHARE_MIN_CHARS
                    and 2 * sum(c.isalpha() for c in text) >= len(text))
    share = shares[len(shares) // 2] if shares else 1.0
    for line in lines:
        half = line.box.height * share / 2
        for word in line.words:
            across = word.ink or word.box
            word.ink = Box(across.x0, line.box.cy - half, across.x1, line.box.cy + half)


def _smoothed(image: np.ndarray) -> np.ndarray:
    """The page in grey levels, each pixel the mean of its 3 × 3 neighbourhood: a lone speck of noise is not taken
    for ink, a one-pixel stroke of a coarse scan still is (a median would erase both)."""
    grey = Image.fromarray(np.ascontiguousarray(image)).convert("L")
    return np.asarray(grey.filter(ImageFilter.BoxBlur(1)))


def _ink_spans(paper: np.ndarray, box: Box,
               spans: Sequence[tuple[float, float]]) -> tuple[tuple[float, float], list[tuple[float, float]]] | None:
    """Where a line's ink is inside its detected box: the band of rows it fills (the run of inked rows around the
    most inked one, so a neighbouring line's descenders reaching into the padding stay out) and each word's span
    trimmed to its inked columns in that band, then grown over the inked columns its end letters run on into (a
    span read a pixel or two short); a span with no ink keeps its extent. Ink is a pixel
    `tuning.OCR_INK_CONTRAST` grey levels darker than the box's median (its paper). None: no ink in the box (light
    text on a dark ground has none), where the box stands as read."""
    height, width = paper.shape[:2]
    x0, y0 = max(0, int(box.x0)), max(0, int(box.y0))
    x1, y1 = min(width, int(np.ceil(box.x1))), min(height, int(np.ceil(box.y1)))
    region = paper[y0:y1, x0:x1].astype(np.int16)
    if region.size == 0:
        return None
    ink = region < int(np.median(region)) - tuning.OCR_INK_CONTRAST
    counts = ink.sum(axis=1)
    rows = counts > 0
    if not rows.any():
        return None
    peak = int(np.argmax(counts))
    top, bottom = peak, peak + 1
    while top > 0 and rows[top - 1]:
        top -= 1
    while bottom < len(rows) and rows[bottom]:
        bottom += 1
    columns = ink[top:bottom].sum(axis=0) > 0
    inked: list[tuple[int, int] | None] = []  # each span's first and past-last inked column, in the box
    for start, stop in spans:
        first, last = max(0, int(start) - x0), min(len(columns), int(np.ceil(stop)) - x0)
        found = np.flatnonzero(columns[first:last]) if last > first else np.empty(0, dtype=np.int64)
        inked.append((first + int(found[0]), first + int(found[-1]) + 1) if found.size else None)
    # A span read a little short of its word's first or last letter takes the rest of that letter's columns.
    trimmed: list[tuple[float, float]] = []
    for index, (span, own) in enumerate(zip(spans, inked, strict=True)):
        if own is None:
            trimmed.append(span)
            continue
        left, right = own
        floor = max((edge[1] for edge in inked[:index] if edge is not None), default=0)
        ceiling = min((edge[0] for edge in inked[index + 1:] if edge is not None), default=len(columns))
        while left > floor and columns[left - 1]:
            left -= 1
        while right < ceiling and columns[right]:
            right += 1
        trimmed.append((float(x0 + left), float(x0 + right)))
    return (float(y0 + top), float(y0 + bottom)), trimmed


def _share_spans(box: Box, tokens: list[str]) -> list[tuple[float, float]]:
    total = sum(len(t) for t in tokens) + max(0, len(tokens) - 1)
    spans: list[tuple[float, float]] = []
    cursor = 0
    for token in tokens:
        start = box.x0 + box.width * cursor / max(1, total)
        cursor += len(token)
        spans.append((start, box.x0 + box.width * cursor / max(1, total)))
        cursor += 1
    return spans


def _read_spans(box: Box, tokens: list[str], placed: Any) -> list[tuple[float, float]] | None:
    """Each word from its first character's output column to its last's, widened by half a character pitch (the
    median column step between neighbouring characters of a word) on each side; a column is `line_txt_len`-th of
    the box's width."""
    columns = [int(c) for word in getattr(placed, "word_cols", None) or () for c in word]
    length = float(getattr(placed, "line_txt_len", 0) or 0)
    if length <= 0 or len(columns) != sum(len(t) for t in tokens) or columns != sorted(columns):
        return None
    read: list[list[int]] = []  # each token's characters' columns
    at = 0
    for token in tokens:
        read.append(columns[at:at + len(token)])
        at += len(token)
    steps = [b - a for word in read for a, b in zip(word, word[1:], strict=False)]
    pitch = float(np.median(steps)) if steps else length / max(1, len(" ".join(tokens)))
    step = box.width / length
    spans: list[tuple[float, float]] = []
    for word in read:
        start = box.x0 + (word[0] + 0.5 - pitch / 2) * step
        stop = box.x0 + (word[-1] + 0.5 + pitch / 2) * step
        spans.append((min(max(start, box.x0), box.x1), min(max(stop, box.x0), box.x1)))
    return spans
