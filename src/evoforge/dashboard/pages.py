"""Server-rendered HTML. Every text that comes from a run (programs, responses, verifier
reasons, metrics, task names, stage tables) passes through ``e()`` or Pygments, which escape
it; the pages carry no inline script or style (the Content-Security-Policy forbids both), and
the charts are drawn by static/dashboard.js from JSON endpoints."""
from __future__ import annotations

import json
import math
from html import escape
from typing import Any, Iterable

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, PythonLexer

FORMATTER = HtmlFormatter(cssclass="hl", nowrap=False)
PYGMENTS_CSS = FORMATTER.get_style_defs(".hl")


def e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def num(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.10g}" if math.isfinite(value) else str(value)
    return e(value)


def layout(title: str, body: str, *, page: str, run: int | None = None, crumbs: Iterable[tuple[str, str]] = ()) -> str:
    nav = " / ".join([f'<a href="{e(href)}">{e(text)}</a>' for href, text in [("/", "runs"), *crumbs]])
    run_attr = f' data-run="{run}"' if run is not None else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)} - evoforge</title>
<link rel="stylesheet" href="/static/uPlot.min.css">
<link rel="stylesheet" href="/static/dashboard.css">
<link rel="stylesheet" href="/static/pygments.css">
</head><body data-page="{e(page)}"{run_attr}>
<header><span class="brand">evoforge</span> <nav>{nav}</nav>
<span id="live" class="live" title="the page polls the run store"></span></header>
<main><h1>{e(title)}</h1>
{body}
</main>
<script src="/static/uPlot.iife.min.js"></script>
<script src="/static/dashboard.js"></script>
</body></html>"""


def table(headers: list[str], rows: Iterable[list[str]], cls: str = "") -> str:
    """``rows`` hold HTML already escaped by the caller."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{e(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def chart(ident: str, title: str, note: str = "") -> str:
    n = f'<p class="note">{e(note)}</p>' if note else ""
    return f'<section class="chart"><h2>{e(title)}</h2>{n}<div class="plot" id="{e(ident)}"></div></section>'


def overview(runs: list[dict[str, Any]]) -> str:
    rows = [[f'<a href="/run/{k}">{e(s["name"])}</a>', e(s["task"]), num(s["best_score"]), num(s["initial_score"]),
             num(s["target"]), e(s["evaluated"]), e(s["children"]), e(s["steps"]), e(s["selector"])]
            for k, s in enumerate(runs)]
    body = table(["run", "task", "best", "initial", "best known", "evaluations", "children", "steps", "selector"],
                 rows, "runs")
    body += '<div class="grid">' + chart("overlay-evals", "Best score over evaluations") + \
        chart("overlay-time", "Best score over time (s)") + "</div>"
    return layout("Runs", body, page="overview")


def run_page(k: int, s: dict[str, Any], tables: dict[str, int], islands: bool = False) -> str:
    classes = ", ".join(f"{e(c)} {n}" for c, n in s["classes"].items() if n)

    def live(key: str, text: str) -> str:  # a figure the page script keeps current
        return f'<span data-live="{key}">{text}</span>'

    facts = [("task", e(s["task"])), ("direction", e(s["direction"])),
             ("best score", live("best_score", num(s["best_score"]))),
             ("initial score", num(s["initial_score"])), ("best known", num(s["target"])),
             ("evaluations", live("evaluated", e(s["evaluated"]))), ("children", live("children", e(s["children"]))),
             ("steps", live("steps", e(s["steps"]))),
             ("classes", classes), ("selector", e(s["selector"])), ("backend", e(s["backend"]))]
    best = s["best_id"]
    links = [f'<a href="/run/{k}/programs">all programs</a>', f'<a href="/run/{k}/programs?sort=score">best first</a>',
             f'<a href="/run/{k}/tree">lineage of the best</a>']
    if best is not None:
        links.append(f'<a href="/run/{k}/program/{int(best)}">best program #{int(best)}</a>')
    body = '<div class="facts">' + table(["", ""], [[e(a), b] for a, b in facts], "facts") + \
        '<p class="links">' + " · ".join(links) + "</p></div>"
    body += '<div class="grid">' + "".join([
        chart("best-evals", "Best score over evaluations",
              "line: best so far; dots: each evaluation (min/max per bucket)"),
        chart("best-time", "Best score over time (s)"),
        chart("classes", "Children per class per step"),
        chart("rate", "Children per second"),
        chart("times", "Evaluation time (s)", "histogram, clipped at the 99th percentile"),
    ]) + "</div>"
    body += ('<section id="train" class="hidden"><h2>Training (per step)</h2>'
             '<div class="grid" id="train-plots"></div></section>')
    if islands:
        body += f'<section><h2>Islands</h2><p><a href="/run/{k}/islands">the islands of the selector</a></p></section>'
    if "memory_ideas" in tables:
        body += f'<section><h2>Idea memory</h2><p><a href="/run/{k}/ideas">the idea tree</a> ' \
            f'({tables["memory_ideas"]} ideas)</p></section>'
    if tables:
        items = "".join(f'<li><a href="/run/{k}/table/{e(n)}">{e(n)}</a> ({c} rows)</li>' for n, c in tables.items())
        body += f'<section><h2>Stage tables</h2><ul class="stage-tables">{items}</ul></section>'
    return layout(s["name"], body, page="run", run=k, crumbs=[(f"/run/{k}", s["name"])])


def pager(base: str, page: int, pages: int, extra: str = "") -> str:
    def link(p: int, text: str) -> str:
        return f'<a href="{e(base)}?page={p}{e(extra)}">{e(text)}</a>'
    parts = [link(0, "first")] if page > 0 else []
    if page > 0:
        parts.append(link(page - 1, "previous"))
    parts.append(f"page {page + 1} of {pages}")
    if page + 1 < pages:
        parts += [link(page + 1, "next"), link(pages - 1, "last")]
    return '<p class="pager">' + " · ".join(parts) + "</p>"


def _program_rows(k: int, rows: list[dict[str, Any]], with_children: bool = False) -> list[list[str]]:
    out = []
    for r in rows:
        parent = f'<a href="/run/{k}/program/{r["parent"]}">#{r["parent"]}</a>' if r["parent"] is not None else ""
        row = [f'<a href="/run/{k}/program/{r["id"]}">#{r["id"]}</a>', e(r["step"]), parent,
               f'<span class="cls {e(r["class"])}">{e(r["class"])}</span>', num(r["score"]), num(r["wall_time"])]
        if with_children:
            row.append(f'<a href="/run/{k}/tree?node={r["id"]}">{r["children"]} children</a>')
        out.append(row)
    return out


def programs_page(k: int, name: str, data: dict[str, Any], sort: str, cls: str | None) -> str:
    extra = f"&sort={sort}" + (f"&cls={cls}" if cls else "")
    filters = " · ".join(
        [f'<a href="/run/{k}/programs?sort={s}">{t}</a>' for s, t in (("id", "in order"), ("score", "best first"))]
        + [f'<a href="/run/{k}/programs?sort={e(sort)}&amp;cls={c}">{c}</a>'
           for c in ("evaluated", "invalid", "no_solution", "unchanged", "no_diff")])
    body = f'<p class="links">{filters}</p><p>{data["total"]} children</p>'
    body += pager(f"/run/{k}/programs", data["page"], data["pages"], extra)
    body += table(["id", "step", "parent", "class", "score", "eval s"], _program_rows(k, data["rows"]), "programs")
    return layout(f"{name}: programs", body, page="programs", run=k,
                  crumbs=[(f"/run/{k}", name), (f"/run/{k}/programs", "programs")])


def tree_page(k: int, name: str, t: dict[str, Any]) -> str:
    anc = table(["id", "step", "parent", "class", "score", "eval s", "children"],
                _program_rows(k, t["ancestors"], True), "lineage")
    kids = table(["id", "step", "parent", "class", "score", "eval s", "children"],
                 _program_rows(k, t["children"], True), "children")
    more = f'<p class="note">and {t["more"]} more</p>' if t["more"] else ""
    body = (f'<p>Lineage of <a href="/run/{k}/program/{t["node"]}">#{t["node"]}</a>: from the seed down to it; '
            "click a row's children to walk the tree.</p>"
            + '<section class="chart"><h2>Program tree</h2><p class="note">the 60 best programs and their ancestors, '
            "left to right by step, coloured by score; click a node for its lineage</p>"
            f'<div id="forest" class="forest" data-node="{int(t["node"])}"></div></section>'
            + chart("lineage-plot", "Score along the lineage")
            + f"<h2>Ancestors</h2>{anc}<h2>Children of #{t['node']} (best first)</h2>{kids}{more}")
    return layout(f"{name}: lineage of #{t['node']}", body, page="tree", run=k,
                  crumbs=[(f"/run/{k}", name), (f"/run/{k}/tree?node={t['node']}", f"tree #{t['node']}")])


def program_page(k: int, name: str, p: dict[str, Any]) -> str:
    pid = int(p["id"])
    facts = [("class", e(p.get("child_class") or "pending")), ("status", e(p.get("status"))),
             ("score", num(p.get("score"))), ("fitness", num(p.get("fitness"))), ("reward", num(p.get("reward"))),
             ("step", e(p.get("step"))), ("evaluation time (s)", num(p.get("wall_time"))),
             ("tokens (prompt / completion)", f'{e(p.get("prompt_tokens"))} / {e(p.get("completion_tokens"))}')]
    if p.get("parent_id") is not None:
        facts.append(("parent", f'<a href="/run/{k}/program/{int(p["parent_id"])}">#{int(p["parent_id"])}</a>'))
    if p.get("partner_id") is not None:
        partner = int(p["partner_id"])
        facts.append(("crossover partner", f'<a href="/run/{k}/program/{partner}">#{partner}</a>'))
    facts.append(("lineage", f'<a href="/run/{k}/tree?node={pid}">tree ({p["n_children"]} children)</a>'))
    body = table(["", ""], [[e(a), b] for a, b in facts], "facts")
    metrics = p.get("metrics") or {}
    if isinstance(metrics, dict) and metrics:
        simple = [(key, v) for key, v in metrics.items() if isinstance(v, (int, float, str, bool)) or v is None]
        other = {key: v for key, v in metrics.items() if (key, v) not in simple}
        body += "<h2>Metrics</h2>" + table(["metric", "value"], [[e(a), num(v)] for a, v in simple], "metrics")
        if other:
            body += "<h2>Artifacts</h2>" + _pre(json.dumps(other, indent=1, default=str), "artifacts")
    if p.get("feedback"):
        body += "<h2>Verifier and program output</h2>" + _pre(p["feedback"], "feedback")
    if p.get("has_object"):
        body += f'<h2>Object</h2><img class="object" alt="object of #{pid}" src="/run/{k}/program/{pid}/object.png">'
    if p.get("code"):
        body += "<h2>Code</h2>" + highlight(p["code"], PythonLexer(), FORMATTER)
    if p.get("diff"):
        body += f"<h2>Diff from the parent #{int(p['parent_id'])}</h2>" + highlight(p["diff"], DiffLexer(), FORMATTER)
    if p.get("response"):
        body += "<h2>The model's response</h2>" + _pre(p["response"], "response")
    if p.get("response_error"):
        body += "<h2>Backend error</h2>" + _pre(p["response_error"], "response")
    return layout(f"{name}: program #{pid}", body, page="program", run=k,
                  crumbs=[(f"/run/{k}", name), (f"/run/{k}/program/{pid}", f"#{pid}")])


def stage_table_page(k: int, name: str, t: dict[str, Any]) -> str:
    links = [c == "child_id" for c in t["columns"]]  # a program: link to its page
    rows = [[f'<a href="/run/{k}/program/{v}">#{v}</a>' if link and isinstance(v, int) else _cell(v)
             for v, link in zip(row, links)] for row in t["rows"]]
    body = f'<p>{t["total"]} rows</p>' + pager(f"/run/{k}/table/{t['name']}", t["page"], t["pages"])
    body += table(list(t["columns"]), rows, "stage")
    return layout(f"{name}: {t['name']}", body, page="table", run=k,
                  crumbs=[(f"/run/{k}", name), (f"/run/{k}/table/{t['name']}", t["name"])])


def ideas_page(k: int, name: str, ideas: list[dict[str, Any]]) -> str:
    """The idea memory as a tree: each idea, then the programs that tested it."""
    items = []
    for i in ideas:
        tests = "".join(
            f'<li><a href="/run/{k}/program/{int(t["id"])}">#{int(t["id"])}</a> step {e(t["step"])} '
            f'<span class="cls {e(t["class"])}">{e(t["class"])}</span> {num(t["score"])} {e(t["finding"] or "")}</li>'
            for t in i["tests"])
        items.append(f'<li><b>#{e(i.get("id"))}</b> <span class="cls">{e(i.get("status"))}</span> {e(i.get("text"))}'
                     f' <span class="note">tested {e(i.get("tested"))}, best {num(i.get("best"))}</span>'
                     f'<ul>{tests}</ul></li>')
    body = f'<p>{len(ideas)} ideas</p><ul class="ideas">{"".join(items)}</ul>'
    return layout(f"{name}: idea memory", body, page="ideas", run=k,
                  crumbs=[(f"/run/{k}", name), (f"/run/{k}/ideas", "ideas")])


def islands_page(k: int, name: str, data: dict[str, Any], direction: str) -> str:
    """Each island: its size, best and mean score, its best members, and (map-elites) its grid of
    elites over the two feature axes, each cell a link to its program."""
    rows = [[e(i["index"]), e(i["members"]), num(i["best"]), num(i["mean"]), e(i["migrants"])]
            for i in data["islands"]]
    body = (f'<p>{e(data["selector"])}, as of the snapshot after step {int(data["step"])}'
            + (f'; archive of {int(data["archive"])}' if data["archive"] else "") + "</p>"
            + table(["island", "members", "best", "mean", "migrants in"], rows, "islands"))
    scores = [c[3] for i in data["islands"] for c in i["cells"] if c[3] is not None]
    lo, hi = (min(scores), max(scores)) if scores else (0.0, 1.0)
    for i in data["islands"]:
        body += f'<section class="island"><h2>Island {int(i["index"])}</h2>'
        if i["cells"]:
            body += _grid(k, i["cells"], lo, hi, direction)
        body += table(["id", "step", "parent", "class", "score", "eval s"], _program_rows(k, i["top"]), "programs")
        body += "</section>"
    return layout(f"{name}: islands", body, page="islands", run=k,
                  crumbs=[(f"/run/{k}", name), (f"/run/{k}/islands", "islands")])


def _grid(k: int, cells: list[tuple], lo: float, hi: float, direction: str, size: int = 12) -> str:
    n = max(max(x for x, _, _, _ in cells), max(y for _, y, _, _ in cells)) + 1
    parts = [f'<svg class="grid-map" width="{n * size}" height="{n * size}" role="img">'
             f'<rect width="{n * size}" height="{n * size}" fill="#f0f2f4"/>']
    for x, y, pid, score in cells:
        t = 0.5 if score is None or hi == lo else (score - lo) / (hi - lo)
        t = 1 - t if direction == "min" else t
        parts.append(f'<a href="/run/{k}/program/{int(pid)}"><rect x="{int(x) * size}" y="{(n - 1 - int(y)) * size}" '
                     f'width="{size - 1}" height="{size - 1}" fill="{_ramp(t)}"><title>#{int(pid)} {num(score)}'
                     "</title></rect></a>")
    return "".join(parts) + '</svg><p class="note">elites by complexity (across) and diversity (up)</p>'


def _ramp(t: float) -> str:
    """0..1 -> the dashboard's blue-to-yellow ramp (the program tree's, in static/dashboard.js)."""
    stops = ((68, 1, 84), (33, 145, 140), (253, 231, 37))
    a, b, f = (stops[0], stops[1], t * 2) if t < 0.5 else (stops[1], stops[2], (t - 0.5) * 2)
    return "rgb(" + ",".join(str(round(a[j] + (b[j] - a[j]) * f)) for j in range(3)) + ")"


def _cell(v: Any) -> str:
    text = num(v) if not isinstance(v, str) else e(v)
    return f'<span class="long">{text}</span>' if isinstance(v, str) and len(v) > 80 else text


def _pre(text: str, cls: str) -> str:
    return f'<pre class="{e(cls)}">{e(text)}</pre>'


def not_found(what: str) -> str:
    return layout("Not found", f"<p>{e(what)}</p>", page="error")
