"""`pagemill eval` and `pagemill specsim`: quality and speculative-decoding figures (pagemill_eval, the
`[eval]` extra), tools rather than the product."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from services.cli.extras import require_extra
from services.cli.root import main
from services.core.settings import get_settings


@main.command()
@click.argument("corpus_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None,
              help="write the figures (and per-page detail) here; several corpora: one object per corpus name")
@click.option("--write", "markdown_out", type=click.Path(dir_okay=False), default=None,
              help="put the table into this Markdown file (e.g. docs/benchmarks.md) between the specsim markers")
@click.option("-k", "--num-speculative-tokens", "ks", type=click.IntRange(1), multiple=True, default=(4, 8),
              show_default=True, help="draft lengths to simulate; the first one's figures head the JSON")
@click.option("--prompt-lookup-min", default=None, type=click.IntRange(1), help="default: the engine's setting")
@click.option("--prompt-lookup-max", default=None, type=click.IntRange(1), help="default: the engine's setting")
@click.option("--anchor-max-chars", default=6000, show_default=True, type=click.IntRange(0))
@click.option("--case", "case_patterns", multiple=True, help="only cases whose id matches this glob (repeatable)")
@click.option("--anchor", "anchor_names", multiple=True,
              type=click.Choice(["none", "text_layer", "ocr", "engine", "reference", "reference_markup"]),
              help="anchors measured with n-gram drafts (repeatable; default: all but the reference oracles; engine "
                   "always)")
@click.option("--suffix/--no-suffix", default=True, show_default=True,
              help="also simulate vLLM's suffix decoding (the engine's parameters) with each kind of history")
@click.option("--sweep", is_flag=True, help="sweep vLLM's suffix parameters and n-gram lookup lengths; the tables then "
                                           "show the suffix variant best on the first corpus (summed over the draft "
                                           "lengths)")
def specsim(corpus_dirs: tuple[str, ...], json_out: str | None, markdown_out: str | None, ks: tuple[int, ...],
            prompt_lookup_min: int | None, prompt_lookup_max: int | None, anchor_max_chars: int,
            case_patterns: tuple[str, ...], anchor_names: tuple[str, ...], suffix: bool, sweep: bool) -> None:
    """Simulate n-gram speculative decoding on the pages of each CORPUS_DIR with no anchor, the text layer, OCR
    and the anchor the vllm engine sends; and suffix decoding with the engine's anchor."""
    import json
    import shlex

    require_extra("eval", "`pagemill specsim`")
    from pagemill_eval.specsim import report
    from pagemill_eval.specsim.anchors import DEFAULT_ANCHORS
    from pagemill_eval.specsim.run import LOOKUP_MAX, LOOKUP_MIN, PageResult, measure_variants, run_specsim
    from pagemill_eval.specsim.variants import Variant, best_variant, sweep_variants, table_variants

    lookup_min = LOOKUP_MIN if prompt_lookup_min is None else prompt_lookup_min
    lookup_max = LOOKUP_MAX if prompt_lookup_max is None else prompt_lookup_max
    if lookup_min > lookup_max:
        raise click.BadParameter("--prompt-lookup-min must not exceed --prompt-lookup-max")

    def progress(page: PageResult) -> None:
        figures = page.stats[ks[0]]
        click.echo(f"{page.case_id} p{page.page_number}: {page.target_tokens} tokens, "
                   + ", ".join(f"{name} {stats.committed_per_step:.2f}" for name, stats in figures.items()), err=True)

    runs = []
    for corpus_dir in corpus_dirs:
        run = run_specsim(Path(corpus_dir), get_settings(), ks=ks, lookup_min=lookup_min, lookup_max=lookup_max,
                          anchor_max_chars=anchor_max_chars, case_patterns=case_patterns,
                          variants=table_variants() if suffix and not sweep else (),
                          sweep=sweep_variants() if sweep else (), anchor_names=anchor_names or DEFAULT_ANCHORS,
                          on_page=progress)
        if not run.pages:
            raise click.ClickException(f"{corpus_dir}: no page with a page-level reference was found")
        runs.append((Path(corpus_dir).name, run))
    if sweep:  # tuned on the first corpus, the others held out
        suffix_sweep = [variant for variant in runs[0][1].sweep if isinstance(variant, Variant)]
        chosen = best_variant(runs[0][1].pages, suffix_sweep, ks).params
        for _, run in runs:
            run.variants = table_variants(chosen)
            measure_variants(run, run.variants)
    for name, run in runs:
        click.echo(f"{name}:\n{report.tables(run)}")
        if run.skipped:
            click.echo("\nskipped: " + "; ".join(f"{case_id} ({reason})" for case_id, reason in run.skipped))
    if json_out:
        body = report.to_json(runs[0][1]) if len(runs) == 1 else {name: report.to_json(run) for name, run in runs}
        Path(json_out).write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if markdown_out:
        report.write_section(Path(markdown_out), report.markdown_section(runs, shlex.join(["pagemill", *sys.argv[1:]])))
    if sweep:
        click.echo("\n" + report.sweep_table(runs))


@main.command("eval")
@click.argument("corpus_dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--engine", default=None, help="in-process engine (cpu, vllm, fake); default: settings")
@click.option("--mode", default=None, type=click.Choice(["fast", "balanced", "accurate"]), help="sent with --server")
@click.option("--json", "json_out", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="write the report ({overall, by_kind, cases}; several: {reports}) here")
@click.option("--cases", "patterns", multiple=True, help="only cases whose id matches this glob (repeatable)")
@click.option("--server", default=None, help="a live pagemill URL instead of parsing in this process")
@click.option("--api-key", envvar="PAGEMILL_API_KEY", default=None, help="bearer key for --server")
@click.option("--predictions", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="score saved outputs (DIR/<case>.json; `{corpus}` in DIR: the corpus folder's name)")
@click.option("--save-outputs", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="keep each case's per-page Markdown as DIR/<case>.json (several corpora: DIR/<corpus>/)")
@click.option("--beside", "beside", multiple=True, metavar="NAME=DIR",
              help="also score a peer's saved outputs (DIR/<case>.json, `{corpus}` as above) beside it (repeatable)")
@click.option("--name", default=None, help="the parser's name in the report")
@click.option("-q", "--quiet", is_flag=True, help="print only the summary")
def eval_command(corpus_dirs: tuple[Path, ...], engine: str | None, mode: str | None, json_out: Path | None,
                 patterns: tuple[str, ...], server: str | None, api_key: str | None, predictions: Path | None,
                 save_outputs: Path | None, beside: tuple[str, ...], name: str | None, quiet: bool) -> None:
    """Parse every case of each CORPUS_DIR and score it against its ground truth (docs/evaluation.md); several
    corpora (dev and wide) and `--beside` peers are reported side by side."""
    require_extra("eval", "`pagemill eval`")
    from pagemill_eval.cli import run_eval

    peers = []
    for entry in beside:
        peer, separator, folder = entry.partition("=")
        if not separator or not peer or not folder:
            raise click.BadParameter(f"{entry!r}: expected NAME=DIR", param_hint="--beside")
        peers.append((peer, folder))
    run_eval(list(corpus_dirs), settings=get_settings(), engine=engine, mode=mode, json_out=json_out,
             patterns=list(patterns), server=server, api_key=api_key, predictions=predictions,
             save_outputs=save_outputs, name=name, quiet=quiet, beside=peers)


@main.command("calibrate-set")
@click.argument("corpus_dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="the folder to write the generated corpus into (MANIFEST.tsv, a folder per case)")
@click.option("--seed", default=28, show_default=True, type=int, help="the same seed and corpora give the same set")
@click.option("--sources", "max_sources", default=16, show_default=True, type=click.IntRange(1),
              help="born-digital source pages drawn from the corpora")
@click.option("--per-page", "kinds_per_page", default=3, show_default=True, type=click.IntRange(1),
              help="cases made from each source page: `clean` and this many minus one degradations")
@click.option("--columns", default=0, show_default=True, type=click.IntRange(0),
              help="also this many pages of 2-3 source pages laid out as columns (text layer / image, alternately)")
@click.option("--cards", default=0, show_default=True, type=click.IntRange(0),
              help="also this many reference cards: source text as short entries in 2-3 columns on one line pitch")
@click.option("--card-headings", default=1.0, show_default=True, type=click.FloatRange(1.0, 3.0),
              help="the cards' headings this many times their entries' size, with no blank line before them")
@click.option("--card-tabs", is_flag=True,
              help="the cards' entries all of two parts, the syntax left-aligned at a tab stop (a tabular card)")
@click.option("--card-degrade", is_flag=True,
              help="the cards' image-only pages degraded (low resolution, blur, skew, turned, noise), not clean scans")
@click.option("--card-long-sections", is_flag=True,
              help="the cards' headings every 30-60 entries, not 4-10 (each page column about one long section)")
@click.option("--card-wordy", is_flag=True,
              help="the cards' descriptions 5-9 words long, not 2-6 (short sentences, as asymptote's card)")
@click.option("--indexes", default=0, show_default=True, type=click.IntRange(0),
              help="also this many index pages: short entries, dot leaders, page numbers, letter headings, 2-3 columns")
def calibrate_set(corpus_dirs: tuple[Path, ...], out_dir: Path, seed: int, max_sources: int,
                  kinds_per_page: int, columns: int, cards: int, card_headings: float, card_tabs: bool,
                  card_degrade: bool, card_long_sections: bool, card_wordy: bool, indexes: int) -> None:
    """Generate a calibration corpus from the born-digital pages of CORPUS_DIRs: each page's text layer is the
    reference, the page is written clean and degraded (docs/evaluation.md, "The generated calibration set")."""
    require_extra("eval", "`pagemill calibrate-set`")
    from pagemill_eval.calibset import describe, write_set

    cases = write_set(list(corpus_dirs), out_dir, seed=seed, max_sources=max_sources, kinds_per_page=kinds_per_page,
                      columns=columns, cards=cards, card_headings=card_headings, card_tabs=card_tabs,
                      card_degrade=card_degrade, card_long_sections=card_long_sections, card_wordy=card_wordy,
                      indexes=indexes)
    click.echo(f"{out_dir}: {describe(cases)}")
