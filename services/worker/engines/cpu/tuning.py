"""The cpu engine's thresholds, named, each with what it measures and in which unit.

They were tuned by hand against the dev corpus (`pagemill eval ../shared/corpus/dev --engine cpu`); change one
only with the eval before and after. Units: `pt` are PDF points (1/72 in; OCR pages: pixels), "line heights" and
"body sizes" are multiples of the line's height or of the page's body font size (`layout.body_size`), a "share" is
a fraction of what the comment names. Numbers that are no choice (Unicode code points, angles, pdfium flags,
rounding of reported signals) stay where they are used.
"""

from __future__ import annotations

# --- The text layer (textlayer.py) ---------------------------------------------------------------------------------
ACCENT_LOOKBACK = 160  # characters: how far back a spacing accent looks for its letter (TeX sets them after a line)
ACCENT_SPACE_GAP = 0.2  # line heights: a space after an absorbed accent goes when the letters this close
FONT_BOLD_WEIGHT = 600  # font weight (CSS scale) from which a font is bold
RULE_MAX_THICKNESS = 2.5  # pt: a path at most this thin is a rule (table border), not a shape
RULE_MIN_LENGTH = 2  # pt: ... and longer than this
ROW_BAND_LOOKBACK = 6  # rows: how many of the rows above a run of characters may take it
ROW_BAND_COMPARABLE = 2.2  # height ratio: runs closer than this in height share a row by a half overlap
GUTTER_NEIGHBOUR_ROWS_ABOVE = 5  # rows: which neighbours vote on whether a gap is a column gutter ...
GUTTER_NEIGHBOUR_ROWS_BELOW = 6  # ... (range end, exclusive)
GUTTER_NEIGHBOUR_DISTANCE = 8  # line heights: neighbours further away do not vote
GUTTER_FREE_SHARE = 0.6  # share of the neighbours reaching over the gap that must leave it free
ROTATED_REACH = 0.8  # font sizes: rotated characters closer than this are one run
LINE_MIN_Y_OVERLAP = 0.4  # line heights: characters overlapping less vertically are not on one line
LINE_MAX_CHAR_GAP = 0.8  # line heights: characters further apart are not one line
LINE_SCRIPT_RATIO = 0.8  # height ratio: a smaller character may be a sub- or superscript, offset from its line ...
LINE_MAX_SHIFT = 0.25  # line heights: ... characters of about one size whose centres are further apart are not
SPACE_MIN_GAP = 0.08  # font sizes: a content-order space between glyphs closer than this is pdfium's, not a word gap

# --- Blocks, reading order, furniture, headings (layout.py) --------------------------------------------------------
BODY_SIZE_DEFAULT = 10.0  # pt: the body size of a page without text
BLOCK_MAX_GAP = 0.9  # line heights: a wider vertical gap starts a new block
BLOCK_MAX_RISE = 0.5  # line heights: a line starting this far above the block's last line is no continuation
BLOCK_ALIGN_TOLERANCE = 2  # line heights: left edges this close are aligned (a block may continue on them)
BLOCK_MIN_X_OVERLAP = 0.3  # share of the narrower width two lines must overlap to be one block (when not aligned)
BLOCK_MAX_SIZE_CHANGE = 0.15  # share of the larger font size two lines of one block may differ by
BLOCK_SHORT_LINE = 0.6  # share of the block's width under which a line of another weight starts a new block
BLOCK_OPEN_DISTANCE = 3  # body sizes: blocks ending further above no longer take lines
SPLIT_MIN_LINES = 3  # lines: a block this long or longer may be split at one clearly wider gap
SPLIT_GAP_FACTOR = 2  # typical gaps: a gap wider than this many typical gaps ...
SPLIT_GAP_MIN_EXTRA = 0.5  # line heights: ... and wider than the typical gap plus this ...
SPLIT_GAP_MAX_EXTRA = 0.75  # line heights: ... but narrower than the typical gap plus this, splits the block
CUT_MIN_GUTTER = 4.0  # pt: an empty vertical band this wide separates columns
CUT_MIN_STRIP_GAP = 0.5  # pt: an empty horizontal band this high separates strips
FURNITURE_TOP_BAND = 0.13  # share of the page height: running heads end above this (LNCS sets them low)
FURNITURE_BOTTOM_BAND = 0.89  # share of the page height: running feet start below this
FURNITURE_MAX_LINES = 3  # lines: longer blocks in the bands are content
FURNITURE_MAX_CHARS = 200  # characters: longer blocks in the bands are content
FURNITURE_SMALL = 0.92  # body sizes: smaller text in a band is furniture when short
FURNITURE_SMALL_MAX_CHARS = 120  # characters: ... that short
FURNITURE_BIG = 1.2  # body sizes: larger text is a title, not furniture, even with a journal-like hint
FURNITURE_TINY = 0.6  # body sizes: text smaller than this ...
FURNITURE_TINY_REACH = 0.05  # share of the page height: ... is furniture this much further from the edge
FURNITURE_LIKE_MAX_LINES = 2  # lines: a block between furniture and the edge, no taller, does not block it
BULLET_MIN_Y_OVERLAP = 0.5  # share of the lower height: a lone bullet glyph overlapping a line this much ...
BULLET_MAX_GAP = 2.5  # line heights: ... and at most this far left of it is that line's marker
HEADING_MIN_SIZE = 1.12  # body sizes: larger short blocks are headings
HEADING_LEVEL1_MIN_SIZE = 1.5  # body sizes: a level-1 heading is at least this large (else level 2)
HEADING_MAX_LEVEL = 4  # the deepest heading level the sizes give
HEADING_MAX_LINES = 3  # lines: a heading is no longer
HEADING_MAX_CHARS = 200  # characters: a heading is shorter
HEADING_SENTENCE_WORDS = 10  # words: a larger block ending in a full stop with more words is a sentence
HEADING_DATE_MAX_WORDS = 0  # words: a date with no more words than this beside it (labels aside) is no heading
HEADING_LABEL_RUN = 3  # blocks: this many same-sized short lines in a row are labels (a chart axis), not headings
LABEL_MAX_CHARS = 40  # characters: ... each this short
GLYPH_RUN_LETTERS = 5  # letters: a word running this far along the alphabet is glyph noise (a logo font)
CODE_MIN_MONO = 0.8  # share of a block's characters in a monospace font that makes it code
CODE_MIN_LINES = 2  # lines: code blocks have at least this many

# --- Tables among lines, ruled tables (tables.py) ------------------------------------------------------------------
TABLE_MIN_ROWS = 3  # rows: tabular rows a table needs
TABLE_MAX_ROW_GAP = 2.5  # body sizes (or row heights): a wider gap ends the table
TABLE_MAX_LOOSE_ROWS = 3  # rows: single-segment rows a table may hold in a row before it ends
TABLE_WORDY_SEGMENT = 6  # words: a segment this long is prose; rows mostly of such segments are not tabular
TABLE_TWO_PART_SHORT = 0.3  # share of the text width: in a two-segment row, one segment must be shorter
TABLE_MEDIAN_SEGMENT = 0.4  # share of the text width: a tabular row's median segment is shorter
PROSE_SEGMENT_WORDS = 5  # words: a segment this long counts as running text ...
PROSE_SHARE = 0.4  # ... and a region with more than this share of such segments is prose, not a table
CELL_WRAP_MAX_GAP = 0.5  # line heights: a wrapped cell line sits at most this far under its row
CELL_WRAP_INDENT = 0.5  # line heights: ... and starts at most this far left of a segment
LOOSE_ROW_MAX_WIDTH = 0.5  # share of the text width: a one-segment row inside a table is narrower ...
LOOSE_ROW_MAX_CHARS = 80  # characters: ... and shorter
HEADER_MAX_ROWS_ABOVE = 2  # rows: short rows right above a table that may be its column headers
HEADER_MAX_GAP = 1.5  # body sizes (or row heights): a header row sits at most this far above the table
CAPTION_WRAP_GAP = 1.0  # line heights: a line this close under a caption ("Table 2: ...") is more of the caption
CAPTION_EDGE_SLACK = 1.0  # line heights: a note over a table is this flush with its left or right edge ...
CAPTION_GAP_OVER_HEADER = 1.5  # ... and set this many times further apart than the header's own rows ...
CAPTION_MIN_ROW_GAP = 0.25  # ... line heights: the least gap between header rows counted for that
HEADER_MAX_WIDTH = 0.5  # share of the text width: a one-segment header row is narrower
RULE_MERGE_OFFSET = 1.5  # pt: collinear rules at most this far apart across ...
RULE_MERGE_GAP = 2.0  # pt: ... and this far apart along their length are one rule
RULE_CROSS_TOLERANCE = 2  # pt: a horizontal and a vertical rule this close cross
RULE_CLUSTER_X = 4.0  # pt: vertical rules this close are one grid line (double borders, boxed cells)
RULE_CLUSTER_Y = 3.0  # pt: horizontal rules this close are one grid line
LATTICE_MIN_LINES = 3  # grid lines: a drawn grid has this many in one direction at least (else a box)
LATTICE_MIN_WIDTH = 30  # pt: a drawn grid is at least this wide ...
LATTICE_MIN_HEIGHT = 12  # pt: ... and this high
LATTICE_SPACER_WIDTH = 0.5  # median column widths: an empty drawn column narrower than this is a gap, not a column
LATTICE_MAX_FIGURE_ROWS = 3  # text rows with figures in two drawn columns or more: a drawn row holding this many
#                              is no row (the rules draw only columns); the text finder reads that table instead
EDGE_TOLERANCE = 4.0  # pt: a rule this close to a cell edge draws it
EDGE_MIN_DRAWN = 0.6  # share of a cell edge that rules must cover for the edge to count as drawn
OUTSIDE_COLUMN_SHARE = 0.6  # share of a drawn grid's rows with text: labels beside the grid in this many rows ...
OUTSIDE_COLUMN_PAD = 1.0  # pt: ... make a column of it (outside.py), its edge this far beyond the labels

# --- Columns and cells of a table (grid.py) ------------------------------------------------------------------------
ROW_LOOKBACK = 3  # rows: how many of the rows above a line may take it
ROW_MIN_Y_OVERLAP = 0.5  # line heights (the smaller): a line overlapping a row this much joins it
GRID_MIN_NUMERIC_ROWS = 3  # rows: with fewer rows holding figures, every row places the columns
GRID_WIDE_ROW_SHARE = 6  # rows: one row in this many may straddle a column gap ("Total" labels running wide)
FIGURE_GAP = 0.4  # line heights: two figures of one run further apart than this may stand in two columns
SPAN_MIN_OVERLAP = 0.25  # share of the narrower of a segment and a column that they must overlap
CELL_LINE_PITCH = 0.5  # typical row pitches: a text row closer than this to the one above is more lines of its cells
ROW_JOIN_PITCH = 1.25  # typical row pitches: rows closer than this may be one row of wrapped cells
HEADER_CELL_GAP = 0.45  # line heights: in a row without figures, a word gap in a gutter this wide parts two heads
HEADER_GAP_OVER_SPACE = 1.5  # ... and this many times the segment's narrowest word gap, where it has several
HEADER_FIGURE_SHARE = 2  # a leading row with figures in at least 1/this of its filled data cells is no header
HEADER_MAX_ROWS = 5  # rows: the header of a table found among lines is at most this long
HEADER_OVERFLOW = 1.3  # column widths: a header cell wider than this spans columns
HEADER_ALIGN_MIN = 3.0  # pt: the least tolerance when a spanning header is centred over its columns ...
HEADER_ALIGN_SHARE = 0.15  # share of the header cell's width: ... or this, when larger
SECTION_MIN_COLS = 3  # columns: narrower tables have no section rows

# --- OCR (ocr.py) --------------------------------------------------------------------------------------------------
OCR_MAX_SIDE_LEN = 4096  # px: RapidOCR's cap on the image side it detects on
OCR_ORIENTATION_MIN_SIDE = 12  # px: smaller text boxes do not vote on the page's orientation
OCR_ORIENTATION_ASPECT = 1.5  # side ratio: a box this much taller than wide votes upright, wider: lying text
OCR_ORIENTATION_SAMPLE = 16  # boxes: the widest ones the line classifier votes on for a half turn
OCR_SIZE_PER_HEIGHT = 0.75  # font size of an OCR line per pixel of its box height
OCR_INK_CONTRAST = 30  # grey levels: a pixel this much darker than its line box's median is ink (`ocr._ink_spans`)
OCR_INK_SHARE_MIN_CHARS = 12  # characters, half of them letters: a line this long holds ascenders and descenders
OCR_INK_MAX_TILT = 1.0  # degrees: a detected box tilted more holds other lines' ink; its words keep the box
OCR_DOUBTFUL_MEAN_SCORE = 0.8  # recognition score (character-weighted mean) under which a page's turn is doubted
OCR_DOUBTFUL_KEPT = 0.5  # share of detected boxes read under which a page's turn is doubted
OCR_TURN_MIN_GAIN = 1.15  # another turn wins when its reading strength beats the first one's by this factor
OCR_TURN_SAMPLE = 12  # boxes: the widest ones read to compare the turns of a doubtful page
OCR_RESCALE_SAMPLE = 12  # lines read again at another scale (`ocr_rescale_agreement`): at most this many ...
OCR_RESCALE_TARGET_CHARS = 24  # ... the ones nearest this length (a crop's width is what recognition costs) ...
OCR_RESCALE_MIN_CHARS = 6  # ... and at least this long
OCR_RESCALE_HEIGHT = 16  # px: that second reading's crops are shrunk to this height (ocr.rescale_agreement)

# --- Choosing text layer or OCR, confidence (engine.py, confidence.py) ---------------------------------------------
OCR_MAX_RENDER_SIDE = 2400  # px: the longest side a page is rendered at for OCR, where recognition stops gaining
OCR_RENDER_INCHES = 11  # in: the longest side of the page as rendered for OCR (letter height) at `ocr_dpi`
MARGIN_SHARE_LEFT = 0.12  # share of the page width: rotated text left of this is margin furniture
MARGIN_SHARE_RIGHT = 0.88  # share of the page width: rotated text right of this is margin furniture
OCR_BODY_SIZE_FACTOR = 1.05  # OCR line heights overstate font size: headings must stand out this much more
SPARSE_LAYER_IMAGE_COVERAGE = 0.3  # share of the page under pictures above which a nearly empty layer means OCR
LAYER_MAX_UNMAPPED = 0.1  # share of characters without a Unicode mapping above which the page is OCRed
LAYER_MIN_QUALITY = 0.85  # text quality (share of plausible characters) under which the page is OCRed
LAYER_MIN_WORD_SHAPE = 0.6  # share of plausible words under which the page is OCRed
LAYER_VERIFY_INVISIBLE = 0.5  # share of invisible characters (an OCR layer) above which ...
LAYER_VERIFY_IMAGE_COVERAGE = 0.5  # ... over a page this much covered by pictures, the layer is checked against OCR
WORD_SHAPE_SHORT = 3  # characters: words this short may mix letters and digits
WORD_SHAPE_MAX_CASE_CHANGES = 1  # lower-to-upper changes a plausible word has at most
PICTURE_PAGE_COVERAGE = 0.5  # share of the page under pictures above which ...
PICTURE_PAGE_MAX_CHARS = 200  # characters: ... a text layer this short ...
PICTURE_PAGE_PENALTY = 0.8  # ... has its confidence scaled by this (it may not describe the picture)
OCR_BLANK_CONFIDENCE = 0.9  # confidence of a page where OCR found no text at all (a blank page)
OCR_CONFIDENCE_BASE = 0.6  # OCR confidence = mean score × (this + OCR_KEPT_WEIGHT × share of boxes read)
OCR_KEPT_WEIGHT = 0.4
OCR_LOW_SCORE = 0.85  # recognition score under which a line counts as doubtful (`ocr_low_score_share`)
# Fitted, not chosen (confidence.OcrPenalties): what one degree of line tilt and the share of characters on
# doubtful lines take off an OCR page's confidence. A logistic regression of "text similarity >= 0.5" on the
# page's confidence, its tilt and its doubtful share over the generated calibration sets of seeds 28 and 30, its
# weights divided by the confidence's (docs/evaluation.md, "A fitted confidence"). To refit:
#   python -m pagemill_eval.penalty_fit generated=gen28.json:out/gen28 generated=gen30.json:out/gen30
OCR_PENALTY_PER_SKEW_DEG = 0.186  # confidence taken off per degree of line tilt
OCR_PENALTY_PER_DOUBT_SHARE = 0.334  # confidence taken off per unit of share of characters on doubtful lines
# Confidence taken off per unit of 1 − `ocr_rescale_agreement` (lines read again at OCR_RESCALE_HEIGHT). 0: no fold
# of the generated seeds 28 / 30 gained (docs/evaluation.md, "OCR read twice"). To refit:
#   python -m pagemill_eval.rescale_fit gen28=gen28.json:out/gen28 gen30=gen30.json:out/gen30
OCR_PENALTY_PER_RESCALE_DISAGREEMENT = 0.0
LEGIBILITY_INK_PERCENTILE = 0.5  # percent: the grey levels this far in from each end are ink and paper (legibility.py)
LEGIBILITY_MIN_CONTRAST = 48  # grey levels: a page with less ink-to-paper contrast has no edges worth measuring
LEGIBILITY_EDGE_SHARE = 0.1  # share of the contrast: a pixel step at least this large is part of an edge ...
LEGIBILITY_STEEP_PERCENTILE = 90  # percent: ... and this percentile of those steps is the edges' steepest step

# --- What the page holds against what the engine wrote (routes.py, engine.py) --------------------------------------
LAYER_OVER_OCR_SHARE = 0.5  # a rejected layer is kept when OCR reads fewer words than this share of its words
LAYER_OVER_OCR_CONFIDENCE = 0.45  # ... and the page's confidence is at most this
INK_LEVEL = 48  # grey levels: a pixel this far from the page's median grey is ink
BLANK_MAX_INK = 0.002  # share of ink pixels under which a page with no text is blank
EMPTY_INKED_CONFIDENCE = 0.5  # confidence of a page with ink but no text found by any route
DROP_MIN_HELD_WORDS = 8  # words: a page holding fewer is judged only on being empty
DROP_MAX_COVERAGE = 0.3  # share of the held words under which the output dropped text
DROPPED_CONFIDENCE = 0.3  # confidence of a page that dropped text: this × coverage + ...
DROPPED_CONFIDENCE_FLOOR = 0.05  # ... this
TABLE_EMPTY_OK = 0.5  # share of a table's grid that may be empty before its confidence drops
TABLE_EMPTY_WEIGHT = 0.5  # confidence taken off a table whose grid is all empty
TABLE_PACKED_WEIGHT = 0.5  # confidence taken off a table whose every cell holds two figures or more
TABLE_PROSE_CELL_WORDS = 6  # words: a table cell this long holds a sentence (`table_prose_share`)
# Confidence taken off per unit of `table_prose_share`. 0: the fit on the generated sets with column pages (1.423,
# `pagemill_eval.table_prose_fit`) gained a little on the fresh Debian seed 43 and lost on wide, whose real tables
# hold sentence-long cells (docs/evaluation.md, "Columns read as one table"). To refit and judge:
#   python -m pagemill_eval.table_prose_fit generated=gen28.json:out/gen28 generated=gen30.json:out/gen30 --judge ...
TABLE_PROSE_PENALTY = 0.0
TABLE_GUTTER_MIN_GAP = 0.5  # word heights: a band this wide among a table's words is one of its column gaps ...
TABLE_GUTTER_CORE_TRIM = 0.1  # share of the gap's width, each side: ... a word outside the table reaching past this
#                               into the gap crosses it (the page's text does not keep to the gap's two sides) ...
TABLE_GUTTER_MIN_SIDE_WORDS = 5  # words: ... and at least this many outside words on each side of it make it a
#                                  gutter of the page (`table_gutter_share`)
# Fitted, not chosen: confidence taken off per unit of `table_gutter_share` (the share of the page's words in a table
# a page gutter runs through). `pagemill_eval.gutter_fit` on the generated seeds 28 + 30 with column pages (clean and
# column cases); both folds gained and dev + wide hold no page with a share (docs/evaluation.md, "Page columns
# taken for one table"). To refit:
#   python -m pagemill_eval.gutter_fit generated=gen28.json:out/gen28 generated=gen30.json:out/gen30
TABLE_GUTTER_PENALTY = 0.937
TABLE_FLOW_MIN_BLANK = 1.6  # line pitches: two lines of a table's column strip this far apart leave a blank line
TABLE_FLOW_HEADING = 1.2  # word heights: a line whose median box is this tall is a heading (a section break)
TABLE_FLOW_MIN_WIDTH = 15  # word heights: strips this wide hold running text (page columns are 22-25 on the cards;
#                            real tables' columns that break apart, figures and short labels, 2-11 on dev + wide);
#                            so must each run of narrow strips that tiles a table into page columns
TABLE_FLOW_ALIKE = 0.9  # narrowest / widest: narrow strips tiled into runs this alike are page columns (an index's)
# ... and a table with fewer than two such page columns is tiled alike once more, its runs (one strip each allowed)
# at least this many word heights wide: a page set in three or four columns (an index in a larger type) has columns
# narrower than `TABLE_FLOW_MIN_WIDTH`, each maybe one strip (an entry run into its page number leaves no gap to cut
# at). Chosen, not fitted: about 20 characters, the narrowest line a page column carries (an entry and its page
# numbers). At any width from 4 on, the tiling finds page columns in no table of dev + wide and in one page of the
# generated pool (seeds 28 + 30, the 12 sets and the scans): an index of two page columns, its runs 14.1 word heights
# (text similarity 0.21); a Debian judge's three-column index is 13.0 (docs/evaluation.md, "A second family of
# unseen documents; page columns narrower than a wide strip", 2026-12-08).
TABLE_FLOW_MIN_ALIKE_WIDTH = 10
TABLE_FLOW_MIN_BREAKS = 2  # two wide strips, each breaking this often where the other writes (`table_flow_share`)
# ... on a page read by OCR, once is enough. A text-layer page has its producer's order to tell page columns read as
# one table's rows (`table_order_share`), and there one break is also a real table's (wide's icdar2013 us-020, TEDS
# 0.97, whose two wide columns break once); a page read by OCR has only its breaks. Chosen, not fitted: in the
# generated pool (seeds 28 + 30: the 12 sets and the scanned forms of their dev + wide pages) the six OCR-read tables
# breaking once all scored under 0.7 (three cards and a column page, 0.22-0.45; two real tables read badly, 0.29 and
# 0.56), no good one broke at all, and no OCR page of dev + wide breaks (docs/evaluation.md, "Page columns read by
# OCR: one break is enough", 2026-12-07).
TABLE_FLOW_MIN_BREAKS_UNORDERED = 1
# Fitted, not chosen: confidence taken off per unit of `table_flow_share` (the share of the page's words in a table
# two of whose page columns break into sections at different heights). `pagemill_eval.flow_fit` on the generated
# seeds 28 + 30 (clean, column and card cases, cards with larger headings, `--card-headings 1.4`, index pages,
# `--indexes 8`, and tabbed cards, `--card-tabs`, with and without `--card-headings 1.4`); both folds gained and
# dev + wide hold no page with a share (docs/evaluation.md, "Reference cards read as one table", "Larger
# headings", "Index pages" and "Tabbed cards"). To refit:
#   python -m pagemill_eval.flow_fit generated=gen28.json:out/gen28 generated=cards28.json:out/cards28 \
#       generated=idx28.json:out/idx28 generated=tabs28.json:out/tabs28 generated=tabh28.json:out/tabh28 \
#       ... (the same for seed 30)
TABLE_FLOW_PENALTY = 1.082
# A text-layer table of two page columns or more (`pagecolumns.table_order_disorder`): the share of its producer's
# jumps from one run to the next that its reading does not read on, a jump's next word looked for this many words
# on (1: right after; 2 lets a superscript mark or a line number stand between), counted from this many jumps:
# page columns hold dozens of lines each (the generated cards: 150-360 jumps), and a small table's share is noise
# (on dev + wide, a table of 30 jumps has 0.33, the tables of 40 or more 0.003-0.165).
TABLE_ORDER_REACH = 2
TABLE_ORDER_MIN_JUMPS = 40
# Disordered from this share on, a table pays `TABLE_ORDER_PENALTY` per unit of the page's words it holds
# (`table_order_share`). Page columns written down and read across leave about half unread on (the generated cards
# of long sections, seeds 28 and 30: 0.42-0.50). The weight is fitted (`pagemill_eval.order_fit`, as
# `flow_fit`) on the generated sets of seeds 28 and 30 that `flow_fit` uses plus `--cards 8 --card-long-sections`
# with and without `--card-tabs` (lt, lc): both held-out folds gain (docs/evaluation.md, "Page columns read in
# another order than their producer wrote them").
TABLE_ORDER_MIN_DISORDER = 0.3
TABLE_ORDER_PENALTY = 0.717
# Two text blocks side by side, line for line (`beside.beside_readings`): the right one starts where the left one
# ends (overlapping it by at most this share of the narrower one's width) ...
BESIDE_MAX_OVERLAP = 0.1
BESIDE_MIN_HEIGHT_SHARE = 0.5  # ... the two share this much of the shorter one's height ...
BESIDE_MIN_LINES = 5  # runs: ... each holds this many ...
BESIDE_MIN_PAIRED = 0.8  # ... and this share of the runs of the one with fewer sit on a line of the other
# The page's blocks side by side are asked from this many producer's jumps between their runs (a card's page column
# of 20 entries has 39; on dev + wide the ten two-column pages asked have 0 jumps not read on) ...
BESIDE_ORDER_MIN_JUMPS = 20
BESIDE_ORDER_MIN_DISORDER = 0.3  # ... and from this share not read on (the wordy cards: 0.81-0.97) they pay ...
# ... this per unit of the share of the page's words they hold (`beside_order_share`). Chosen on the generated sets
# of seeds 28 and 30 with the wordy cards (`--card-wordy`): those cards read as paragraphs beside code blocks sit at
# text similarity 0.56-0.66, bad under 0.7 and not under 0.5, so the fit of "similarity >= 0.5" puts the weight
# at 0; `pagemill_eval.beside_fit ... --scan` scores each seed at 0-1: "under 0.7" is at its highest and "under 0.5"
# loses least from 0.3 to 0.5 on both seeds (docs/evaluation.md, "Text blocks side by side").
BESIDE_ORDER_PENALTY = 0.4
LOOSE_FIGURE_MAX_WORDS = 6  # words: a block this short with a figure in it may be a table cell read as prose
LOOSE_FIGURE_MIN_LINES = 5  # blocks: a page with this many such blocks and no table ...
LOOSE_FIGURE_SHARE = 0.6  # ... making up this share of its blocks ...
LOOSE_FIGURE_PENALTY = 0.85  # ... has its confidence scaled by this (a table read as paragraphs)
# A page read without a producer's order (OCR) whose text blocks stand beside another line for line, one of entries a
# word or two long (its median line at most this many words, most with a letter: not line numbers) ...
ENTRY_MAX_WORDS = 2
# ... beside one of sentences (its median line at least this many words and this many times the other's) pays ...
ENTRY_MIN_SENTENCE_WORDS = 3
ENTRY_WORDS_RATIO = 2.0
# ... this per unit of the share of the page's words in them. Chosen, not fitted (the wordy cards' scans, 0.57-0.74,
# are bad under 0.7 only; the fit of "under 0.5" gives 0): `pagemill_eval.entries_fit ... --scan` puts "under 0.7" at
# its highest on both seeds at 0.3 (docs/evaluation.md, "Entries read apart by OCR").
BESIDE_ENTRIES_PENALTY = 0.3
