"""The book's diagrams, drawn by code: one visual language, shapes taken from the real
objects.

This module is part of the *book*, not of the runtime package `transformer_lib`: it
needs only the standard library, writes plain SVG (crisp at any zoom, a few kilobytes
each, identical on every run, so strict nbval compares it like any other output) and is
imported by hidden cells of the chapters::

    from booktools import diagrams
    diagrams.multi_head(d_model=512, n_heads=8)  # a Diagram; Jupyter shows it as SVG

The visual language (used by every diagram here and by the heatmaps' axis labels in
`transformer_lib.viz.plot_attention`): one colour per component, `COLORS`; the letters
of `book/notation.md` (B, L, S, T, h, d, d_k, V, N); queries as rows and keys as columns
in every grid, as in every attention heatmap; flows run left to right or top to bottom.
"""

from __future__ import annotations

import math
from html import escape
from typing import Callable, Mapping, Optional, Sequence

# ---- the visual language -------------------------------------------------------------
# One colour per component (Okabe-Ito-like, distinguishable with the common
# colour-vision deficiencies). transformer_lib.viz.COMPONENT_COLORS holds the same
# values for the heatmaps; tests/test_diagrams.py checks that they agree.
COLORS: dict[str, str] = {
    "query": "#D55E00",  # vermillion
    "key": "#0072B2",  # blue
    "value": "#009E73",  # green
    "mask": "#5F5F5F",  # dark grey: cells a mask removes
    "encoder": "#7B5EA7",  # purple
    "decoder": "#B8860B",  # dark gold
    "embedding": "#1E9BB0",  # teal
    "position": "#8E8E00",  # olive
    "ffn": "#C9559E",  # pink
    "norm": "#7F7F7F",  # grey
    "output": "#333333",  # near black: logits, probabilities, outputs
    "attention": "#4D4D4D",  # the attention computation itself
    "data": "#4F7F3F",  # data pipeline
    "optim": "#A03A3A",  # optimiser and schedule
}
INK = "#222222"
MUTED = "#8A8A8A"
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"


def light(color: str, t: float = 0.16) -> str:
    """`color` mixed with white: `t` of the colour, `1 - t` of white (box fills)."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    mix = [round(255 - t * (255 - c)) for c in (r, g, b)]
    return "#" + "".join(f"{c:02X}" for c in mix)


def _f(x: float) -> str:
    """Coordinates with at most one decimal: the SVG is the same on every machine."""
    s = f"{x:.1f}"
    return s[:-2] if s.endswith(".0") else s


def _rich(s: str, size: float) -> str:
    """XML for text with subscripts `_x`, `_{xy}` and superscripts `^x`, `^{xy}`."""
    out, i, small = [], 0, size * 0.72
    while i < len(s):
        ch = s[i]
        if ch in "_^" and i + 1 < len(s) and s[i + 1] not in " ,)":
            if s[i + 1] == "{":
                j = s.index("}", i)
                part, i = s[i + 2 : j], j + 1
            elif ch == "_" and s[i + 1].isalnum():  # d_model, d_k, q_i: a word run
                j = i + 1
                while j < len(s) and s[j].isalnum():
                    j += 1
                part, i = s[i + 1 : j], j
            else:
                part, i = s[i + 1], i + 2
            dy = size * (0.3 if ch == "_" else -0.38)
            out.append(
                f'<tspan dy="{_f(dy)}" font-size="{_f(small)}">{escape(part)}</tspan>'
                f'<tspan dy="{_f(-dy)}">\u200b</tspan>'
            )
        else:
            out.append(escape(ch))
            i += 1
    return "".join(out)


class Diagram:
    """A small SVG canvas: boxes, arrows, text, grids and links; `_repr_svg_` for
    Jupyter.

    Every diagram has a title and a description (`<title>`, `<desc>`): the text
    alternative that screen readers read, besides the `alt` text the book gives the
    image."""

    def __init__(
        self,
        width: float,
        height: float,
        title: str,
        desc: str = "",
        role: Optional[str] = "img",
    ) -> None:
        self.width, self.height, self.title, self.desc, self.role = (
            width,
            height,
            title,
            desc,
            role,
        )
        self._body: list[str] = []
        self._markers: dict[str, str] = {}

    # -- primitives --------------------------------------------------------------------
    def raw(self, xml: str) -> None:
        self._body.append(xml)

    def rect(
        self,
        x,
        y,
        w,
        h,
        stroke=INK,
        fill="none",
        rx=5,
        sw=1.4,
        dash=False,
        opacity=None,
    ):
        extra = ' stroke-dasharray="5 3"' if dash else ""
        if opacity is not None:
            extra += f' fill-opacity="{opacity}"'
        self.raw(
            f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{_f(h)}"'
            f' rx="{_f(rx)}" fill="{fill}" stroke="{stroke}"'
            f' stroke-width="{_f(sw)}"{extra}/>'
        )

    def text(
        self,
        x,
        y,
        s,
        size=13,
        color=INK,
        anchor="middle",
        weight=None,
        italic=False,
        mono=False,
        markup=True,
    ):
        attrs = (
            f'x="{_f(x)}" y="{_f(y)}" font-size="{_f(size)}" fill="{color}"'
            f' text-anchor="{anchor}"'
        )
        if mono:
            attrs += f' font-family="{MONO}"'
        if weight:
            attrs += f' font-weight="{weight}"'
        if italic:
            attrs += ' font-style="italic"'
        body = _rich(s, size) if markup and not mono else escape(s)
        self.raw(f"<text {attrs}>{body}</text>")

    def _marker(self, color: str) -> str:
        mid = "ah" + color.lstrip("#")
        if mid not in self._markers:
            self._markers[mid] = (
                f'<marker id="{mid}" viewBox="0 0 10 10" refX="9" refY="5" '
                'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                f'<path d="M0,0 L10,5 L0,10 z" fill="{color}"/></marker>'
            )
        return mid

    def arrow(
        self,
        points: Sequence[tuple[float, float]],
        color=INK,
        sw=1.5,
        dash=False,
        head=True,
        both=False,
        label=None,
        label_xy=None,
        label_color=None,
        size=11.5,
        anchor="start",
    ):
        pts = " ".join(f"{_f(x)},{_f(y)}" for x, y in points)
        extra = ' stroke-dasharray="5 3"' if dash else ""
        if head:
            extra += f' marker-end="url(#{self._marker(color)})"'
        if both:
            extra += f' marker-start="url(#{self._marker(color)})"'
        self.raw(
            f'<polyline points="{pts}" fill="none" stroke="{color}"'
            f' stroke-width="{_f(sw)}" stroke-linejoin="round"{extra}/>'
        )
        if label:
            if label_xy is None:
                (x0, y0), (x1, y1) = points[0], points[1]
                label_xy = (
                    (x0 + x1) / 2 + (6 if x0 == x1 else 0),
                    (y0 + y1) / 2 - (0 if x0 == x1 else 5),
                )
                anchor = "start" if x0 == x1 else "middle"
            self.text(
                label_xy[0],
                label_xy[1],
                label,
                size=size,
                color=label_color or color,
                anchor=anchor,
            )

    def line(self, x0, y0, x1, y1, color=INK, sw=1.2, dash=False):
        extra = ' stroke-dasharray="4 3"' if dash else ""
        self.raw(
            f'<line x1="{_f(x0)}" y1="{_f(y0)}" x2="{_f(x1)}" y2="{_f(y1)}"'
            f' stroke="{color}" stroke-width="{_f(sw)}"{extra}/>'
        )

    def circle(self, x, y, r, stroke=INK, fill="none", sw=1.4):
        self.raw(
            f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(r)}" fill="{fill}"'
            f' stroke="{stroke}" stroke-width="{_f(sw)}"/>'
        )

    def box(
        self,
        x,
        y,
        w,
        h,
        label,
        color=INK,
        sub=None,
        code=None,
        size=13,
        fill=None,
        dash=False,
        weight="bold",
        sw=1.6,
    ):
        """A component: light fill and outline in its colour, a label, an optional
        second line (`sub`, e.g. a shape) and an optional `transformer_lib` name
        (`code`, monospace)."""
        self.rect(x, y, w, h, stroke=color, fill=fill or light(color), dash=dash, sw=sw)
        lines = [(label, size, weight, False)]
        if sub:
            lines.append((sub, size - 2, None, False))
        if code:
            lines.append((code, size - 2.5, None, True))
        step = size + 3
        y0 = y + h / 2 - step * (len(lines) - 1) / 2 + size * 0.35
        for k, (s, sz, wt, mono) in enumerate(lines):
            self.text(
                x + w / 2,
                y0 + k * step,
                s,
                size=sz,
                weight=wt,
                mono=mono,
                color=INK if k == 0 else "#444444",
            )

    def step_badge(self, x, y, n, color=INK):
        """A numbered circle marking a step of a walk-through."""
        self.circle(x, y, 10, stroke=color, fill=color)
        self.text(x, y + 4.5, str(n), size=12.5, color="#FFFFFF", weight="bold")

    def cells(
        self,
        x,
        y,
        rows,
        cols,
        cell,
        fill=lambda i, j: "#FFFFFF",
        stroke="#9A9A9A",
        text=None,
        text_size=10,
        text_color=lambda i, j: INK,
    ):
        """A grid of `rows` x `cols` square cells of side `cell`, top-left at (x, y)."""
        for i in range(rows):
            for j in range(cols):
                self.raw(
                    f'<rect x="{_f(x + j * cell)}" y="{_f(y + i * cell)}"'
                    f' width="{_f(cell)}" height="{_f(cell)}" fill="{fill(i, j)}"'
                    f' stroke="{stroke}" stroke-width="0.8"/>'
                )
                if text is not None:
                    s = text(i, j)
                    if s:
                        self.text(
                            x + (j + 0.5) * cell,
                            y + (i + 0.5) * cell + text_size * 0.36,
                            s,
                            size=text_size,
                            color=text_color(i, j),
                            markup=False,
                        )

    def link_open(self, href: str, label: str) -> None:
        self.raw(
            f'<a href="{escape(href)}" target="_top" aria-label="{escape(label)}">'
            f"<title>{escape(label)}</title>"
        )

    def link_close(self) -> None:
        self.raw("</a>")

    # -- output ------------------------------------------------------------------------
    def svg(self) -> str:
        defs = "".join(self._markers[k] for k in sorted(self._markers))
        role = f' role="{self.role}"' if self.role else ""
        # inline in a page
        style = "" if self.role else ' style="max-width:100%;height:auto"'
        link_css = "" if self.role else " a{text-decoration:none}"
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(self.width)}"'
            f' height="{_f(self.height)}" viewBox="0 0 {_f(self.width)}'
            f' {_f(self.height)}"{role} aria-labelledby="t d"'
            f' font-family="{FONT}"{style}><title'
            f' id="t">{escape(self.title)}</title><desc'
            f' id="d">{escape(self.desc)}</desc><style>a:hover rect{{stroke-width:3}}'
            f" text{{dominant-baseline:auto}}{link_css}</style><defs>{defs}</defs><rect"
            ' width="100%" height="100%" fill="#FFFFFF"/>'
        )
        return head + "\n".join(self._body) + "</svg>\n"

    def _repr_svg_(self) -> str:
        return self.svg()

    # the text/plain twin of the SVG output: stable, no address
    def __repr__(self) -> str:
        return f"Diagram({self.title!r}, {_f(self.width)}x{_f(self.height)})"

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(self.svg())


def _shape(*dims: str) -> str:
    return "(" + ", ".join(dims) + ")"


def _diverging(v: float, vmax: float) -> str:
    """Blue for negative, vermillion-free orange-brown for positive, white for 0 (vector
    strips)."""
    t = max(-1.0, min(1.0, v / vmax if vmax else 0.0))
    base = "#3B6FB6" if t < 0 else "#C0642B"
    return light(base, abs(t) * 0.85)


# ---- chapter 1: one query's path, and the scaled dot-product attention block ---------
_QKV_COLORS = {"Q": COLORS["query"], "K": COLORS["key"], "V": COLORS["value"]}
# Q, K, V -> (x, y, columns drawn) of each grid
_Cells = dict[str, tuple[float, float, int]]


def query_path(
    tokens: Sequence[str],
    d_model: Optional[int],
    d_k: int,
    d_v: int,
    weights: Optional[Sequence[float]] = None,
    query: int = 0,
) -> Diagram:
    """One query's path through attention: X → X W^Q, X W^K, X W^V → q_i, K, V → scores
    → softmax → weights → weighted sum of the values, with every shape.

    `weights` (one row of attention weights, length `len(tokens)`) shades and labels the
    weight cells with the numbers the chapter computed.
    """
    L = len(tokens)
    c = 16  # cell size
    band = L * c + 50  # vertical room of each of Q, K, V
    top = 40
    D = Diagram(
        980,
        top + 3 * band + 40,
        "One query's path through attention",
        f"The {L} token vectors X, one row per token, are multiplied by three matrices"
        " W^Q, W^K and W^V into queries Q, keys K and values V. The query of"
        f" '{tokens[query]}' is compared with every key (dot products divided by the"
        " square root of d_k), the scores go through a softmax into weights that sum"
        " to 1, and the output is the weighted sum of the values.",
    )
    x0, xy = 60, top + band + 16
    xw = _token_vectors(D, tokens, d_model, query, x0, xy, c)
    pos = _projections(D, L, d_k, d_v, query, c, band, top, x0 + xw * c, xy)
    sx, sy, sc = _scores(D, tokens, query, c, pos)
    wy = _softmax_weights(D, L, weights, sx, sy, sc)
    _weighted_sum(D, L, d_v, c, pos, sx, sc, wy)
    return D


def _token_vectors(
    D: Diagram,
    tokens: Sequence[str],
    d_model: Optional[int],
    query: int,
    x0: float,
    xy: float,
    c: float,
) -> int:
    """query_path's X, one row per token, the query's row darker; returns the columns
    drawn."""
    L = len(tokens)
    xw = min(d_model or 6, 8)
    D.text(x0 + xw * c / 2, xy - 30, "token vectors X", weight="bold")
    D.text(
        x0 + xw * c / 2,
        xy - 14,
        _shape("L", "d_model") + (f" = ({L}, {d_model})" if d_model else ""),
        size=11.5,
    )
    D.cells(
        x0,
        xy,
        L,
        xw,
        c,
        fill=lambda i, j: light(COLORS["embedding"], 0.4 if i == query else 0.15),
        stroke=COLORS["embedding"],
    )
    for i, t in enumerate(tokens):
        D.text(x0 - 6, xy + (i + 0.72) * c, t, size=11.5, anchor="end", markup=False)
    return xw


def _projections(
    D: Diagram,
    L: int,
    d_k: int,
    d_v: int,
    query: int,
    c: float,
    band: float,
    top: float,
    x_end: float,
    xy: float,
) -> _Cells:
    """query_path's Q = X W^Q, K = X W^K, V = X W^V, arrows from X (which ends at
    `x_end`), the query's row outlined; returns where each grid is."""
    col = _QKV_COLORS
    px, widths = 290, {"Q": d_k, "K": d_k, "V": d_v}
    pos: _Cells = {}
    for k, name in enumerate("QKV"):
        y = top + 16 + k * band
        w = min(widths[name], 8)
        pos[name] = (px, y, w)
        letter = {
            "Q": "queries Q = X W^Q",
            "K": "keys K = X W^K",
            "V": "values V = X W^V",
        }[name]
        dim = "d_k" if name != "V" else "d_v"
        D.cells(
            px,
            y,
            L,
            w,
            c,
            fill=lambda i, j, n=name: light(
                col[n], 0.5 if (n == "Q" and i == query) else 0.18
            ),
            stroke=col[name],
        )
        D.text(
            px,
            y - 8,
            letter + ":  " + _shape("L", dim) + f" = ({L}, {widths[name]})",
            size=12,
            color=col[name],
            anchor="start",
            weight="bold",
        )
        D.arrow(
            [
                (x_end + 6, xy + L * c / 2),
                (px - 70, xy + L * c / 2),
                (px - 70, y + L * c / 2),
                (px - 6, y + L * c / 2),
            ],
            color=col[name],
        )
        D.text(
            px - 40,
            y + L * c / 2 - 6,
            f"W^{name}",
            size=12,
            color=col[name],
            weight="bold",
        )
    D.text(
        px - 70,
        top + 3 * band + 6,
        "W^Q, W^K: (d_model, d_k)     W^V: (d_model, d_v)",
        size=11,
        anchor="start",
        color="#444444",
    )
    qx, qy, qw = pos["Q"]
    D.rect(
        qx - 1.5, qy + query * c - 1.5, qw * c + 3, c + 3, stroke=col["Q"], sw=2.4, rx=2
    )
    return pos


def _scores(
    D: Diagram, tokens: Sequence[str], query: int, c: float, pos: _Cells
) -> tuple[float, float, float]:
    """query_path's row of scores q_i · k_j / √d_k, fed by the query and every key;
    returns its x, y and cell size."""
    col, L = _QKV_COLORS, len(tokens)
    qx, qy, qw = pos["Q"]
    sc = c * 1.7
    sx, sy = 600, pos["K"][1] + L * c / 2 - sc / 2
    D.text(sx + L * sc / 2, sy - 26, "scores q_i · k_j / √d_k", weight="bold")
    D.text(sx + L * sc / 2, sy - 10, "(1, L_k)", size=11.5)
    D.cells(sx, sy, 1, L, sc, fill=lambda i, j: "#F4F4F4")
    for j, t in enumerate(tokens):
        D.text(
            sx + (j + 0.5) * sc,
            sy + sc + 13,
            t,
            size=10.5,
            color=col["K"],
            markup=False,
        )
    D.arrow(
        [
            (qx + qw * c + 3, qy + query * c + c / 2),
            (sx - 30, qy + query * c + c / 2),
            (sx - 30, sy + 8),
            (sx - 4, sy + 8),
        ],
        color=col["Q"],
    )
    D.text(
        qx + qw * c + 14,
        qy + query * c + c / 2 + 16,
        f"q_i: the query of “{tokens[query]}”",
        size=11.5,
        color=col["Q"],
        anchor="start",
        markup=True,
    )
    kx, ky, kw = pos["K"]
    D.arrow([(kx + kw * c + 4, ky + L * c / 2), (sx - 4, sy + sc - 8)], color=col["K"])
    D.text(
        kx + kw * c + 14,
        ky + L * c / 2 + 18,
        "every key k_j",
        size=11.5,
        color=col["K"],
        anchor="start",
    )
    return sx, sy, sc


def _softmax_weights(
    D: Diagram,
    L: int,
    weights: Optional[Sequence[float]],
    sx: float,
    sy: float,
    sc: float,
) -> float:
    """query_path's softmax and the row of weights under the scores (shaded and labelled
    with `weights` when given); returns the row's y."""
    wy = sy + sc + 80
    D.arrow(
        [(sx + L * sc / 2, sy + sc + 20), (sx + L * sc / 2, wy - 4)],
        color=COLORS["attention"],
    )
    D.text(
        sx + L * sc / 2 + 8,
        sy + sc + 48,
        "softmax over the row",
        size=11.5,
        anchor="start",
        color=COLORS["attention"],
    )
    D.text(sx + L * sc / 2, wy + sc + 16, "weights a_i: (1, L_k), sum to 1", size=11.5)
    wmax = max(weights) if weights else 1.0
    D.cells(
        sx,
        wy,
        1,
        L,
        sc,
        fill=lambda i, j: light(
            COLORS["attention"], 0.1 + 0.75 * (weights[j] / wmax if weights else 0.3)
        ),
        text=(lambda i, j: f"{weights[j]:.2f}") if weights else None,
        text_size=10,
        text_color=lambda i, j: (
            "#FFFFFF" if weights and weights[j] / wmax > 0.6 else INK
        ),
    )
    return wy


def _weighted_sum(
    D: Diagram, L: int, d_v: int, c: float, pos: _Cells, sx: float, sc: float, wy: float
) -> None:
    """query_path's output z_i: the weights and every value into their weighted sum."""
    col = _QKV_COLORS
    vx, vy, vw = pos["V"]
    ow = min(d_v, 6)
    ox, oy = 860, wy + (sc - c) / 2
    D.arrow(
        [(sx + L * sc + 4, wy + sc / 2), (ox - 6, oy + c / 2)],
        color=COLORS["attention"],
    )
    under = wy + sc + 34
    D.arrow(
        [
            (vx + vw * c + 4, vy + L * c / 2),
            (sx - 20, vy + L * c / 2),
            (sx - 20, under),
            (ox + ow * c / 2, under),
            (ox + ow * c / 2, oy + c + 4),
        ],
        color=col["V"],
    )
    D.text(
        vx + vw * c + 14,
        vy + L * c / 2 - 7,
        "every value v_j",
        size=11.5,
        color=col["V"],
        anchor="start",
    )
    D.cells(
        ox,
        oy,
        1,
        ow,
        c,
        fill=lambda i, j: light(COLORS["output"], 0.25),
        stroke=COLORS["output"],
    )
    D.text(ox + ow * c / 2, oy - 30, "output z_i", weight="bold")
    D.text(ox + ow * c / 2, oy - 14, "Σ_j a_{ij} v_j: (1, d_v)", size=11.5)


def attention_block(masked: bool = True) -> Diagram:
    """Scaled dot-product attention as a block: Q K^T, ÷ √d_k, mask, softmax, · V."""
    D = Diagram(
        980,
        190,
        "Scaled dot-product attention",
        "Queries Q and keys K are multiplied into scores Q K^T of shape (L_q, L_k),"
        " divided by the square root of d_k, masked (cells where the mask is False"
        " become minus infinity), turned into weights by a softmax over each row, and"
        " the weights multiply the values V, giving an output of shape (L_q, d_v)."
        " Leading dimensions such as (B, h) are carried along.",
    )
    y, h = 70, 56
    D.box(20, 20, 112, 40, "Q", COLORS["query"], sub="(…, L_q, d_k)")
    D.box(20, 120, 112, 40, "K", COLORS["key"], sub="(…, L_k, d_k)")
    D.box(700, 120, 112, 40, "V", COLORS["value"], sub="(…, L_k, d_v)")
    steps = [
        ("Q K^T", "(…, L_q, L_k)", COLORS["attention"], False),
        ("÷ √d_k", "(…, L_q, L_k)", COLORS["attention"], False),
        ("mask", "False → −∞", COLORS["mask"], True),
        ("softmax", "over keys: rows sum to 1", COLORS["attention"], False),
    ]
    xs = [180, 310, 440, 570] if masked else [180, 310, None, 440]
    w = 116
    prev = None
    for (label, sub, color, dashed), x in zip(steps, xs):
        if x is None:
            continue
        D.box(x, y, w, h, label, color, sub=sub, dash=dashed, size=13)
        if prev is not None:
            D.arrow([(prev + w, y + h / 2), (x - 2, y + h / 2)])
        prev = x
    assert prev is not None  # the first step is always drawn
    D.arrow([(132, 40), (156, 40), (156, y + 18), (178, y + 18)], color=COLORS["query"])
    D.arrow([(132, 140), (156, 140), (156, y + 38), (178, y + 38)], color=COLORS["key"])
    D.box(740, y - 50, 100, 44, "· V", COLORS["attention"], sub="A V")
    D.arrow(
        [
            (prev + w, y + h / 2),
            (prev + w + 22, y + h / 2),
            (prev + w + 22, y - 28),
            (738, y - 28),
        ],
        label="weights A",
        label_xy=(prev + w + 28, y + 6),
        label_color=COLORS["attention"],
    )
    D.arrow([(756, 118), (756, y - 4)], color=COLORS["value"])
    D.box(
        870, y - 50, 96, 44, "output", COLORS["output"], sub="(…, L_q, d_v)", size=12.5
    )
    D.arrow([(840, y - 28), (868, y - 28)])
    D.text(
        20 + 490,
        180,
        "Attention(Q, K, V) = softmax(Q K^T / √d_k) V — the mask is optional"
        " (chapter 5)",
        size=12,
        color="#444444",
    )
    return D


# ---- chapter 3: multi-head attention -------------------------------------------------
def multi_head(
    d_model: int = 512,
    n_heads: int = 8,
    tokens: Sequence[str] = ("Thinking", "Machines"),
    batch: int = 1,
) -> Diagram:
    """Multi-head attention with one fused projection: embed, project (d → 3d), split
    into Q, K, V, view as h heads of d_k, attend in parallel, concatenate, W^O. The
    seed's five "Thinking Machines" steps are the numbered badges."""
    h, d_k, L = n_heads, d_model // n_heads, len(tokens)
    D = Diagram(
        1000,
        420,
        "Multi-head attention, step by step",
        f"The {L} words are embedded into X of shape (B, L, d) = ({batch}, {L},"
        f" {d_model}). One fused linear layer projects X to width 3d; the result is"
        f" split into Q, K and V, and each is viewed as h = {h} heads of width d_k ="
        f" {d_k}, shape (B, h, L, d_k). The {h} heads attend in parallel; their outputs"
        " are concatenated back to (B, L, h d_k) = (B, L, d) and multiplied by W^O."
        " Numbered badges mark the five steps of the Thinking Machines walk-through.",
    )
    yc = _words_to_projection(D, tokens, d_model, batch)
    ys = _split_into_heads(D, yc, h, d_k, L, d_model, batch)
    hx = _heads_in_parallel(D, ys, h)
    _concat_and_output(D, yc, h, hx)
    D.text(
        500,
        410,
        f"B batch, L length, d = d_model = {d_model}, h = {h}, d_k = d / h = {d_k}",
        size=11.5,
        color="#444444",
    )
    return D


def _words_to_projection(
    D: Diagram, tokens: Sequence[str], d_model: int, batch: int
) -> float:
    """multi_head's steps 1 to 3: the words, their embedding X and the one fused Linear;
    returns the y of the diagram's centre line."""
    L, ink2 = len(tokens), "#444444"
    # 1. tokens
    for i, t in enumerate(tokens):
        D.box(
            18,
            150 + i * 46,
            96,
            34,
            t,
            COLORS["output"],
            size=12.5,
            weight=None,
            sw=1.2,
        )
    D.step_badge(30, 136, 1)
    D.text(66, 130 + 46 * L + 40, "words", size=11.5, color=ink2)
    # 2. embedding -> X
    D.arrow([(116, 150 + L * 23), (150, 150 + L * 23)])
    D.box(
        152,
        150 + L * 23 - 45,
        104,
        90,
        "X",
        COLORS["embedding"],
        sub=_shape("B", "L", "d"),
        code="embedding",
        size=14,
    )
    D.step_badge(164, 150 + L * 23 - 58, 2)
    D.text(204, 150 + L * 23 + 64, f"({batch}, {L}, {d_model})", size=11, color=ink2)
    # 3. fused projection
    yc = 150 + L * 23
    D.arrow([(256, yc), (284, yc)])
    D.box(
        286,
        yc - 45,
        104,
        90,
        "one Linear",
        COLORS["attention"],
        sub="d → 3d",
        code="in_proj",
        size=13,
    )
    D.step_badge(298, yc - 58, 3)
    return yc


def _split_into_heads(
    D: Diagram, yc: float, h: int, d_k: int, L: int, d_model: int, batch: int
) -> list[float]:
    """multi_head's split of the projection into Q, K and V, each a deck of h heads;
    returns the y of each of Q, K, V."""
    ink2 = "#444444"
    ys = [yc - 130, yc - 20, yc + 90]
    D.text(
        338, yc + 64, f"(B, L, 3d) = ({batch}, {L}, {3 * d_model})", size=11, color=ink2
    )
    for (n, col), y in zip(_QKV_COLORS.items(), ys):
        D.arrow([(390, yc), (410, yc), (410, y + 20), (432, y + 20)], color=col)
        D.box(434, y, 64, 40, n, col, sub=_shape("B", "L", "d"), size=13)
        # h heads as a deck of slices
        for k in range(min(h, 8)):
            D.rect(
                548 + k * 5,
                y - 6 + k * 5,
                60,
                34,
                stroke=col,
                fill=light(col, 0.22),
                sw=1.0,
                rx=3,
            )
        D.arrow([(498, y + 20), (546, y + 20)], color=col)
        D.text(
            578 + min(h, 8) * 2.5,
            y + 78,
            _shape("B", "h", "L", "d_k"),
            size=11,
            color=col,
        )
    D.text(
        520,
        ys[0] - 24,
        f"split, view as h = {h} heads of d_k = {d_k}",
        size=11.5,
        color=ink2,
    )
    return ys


def _heads_in_parallel(D: Diagram, ys: Sequence[float], h: int) -> float:
    """multi_head's step 4: the heads (at most 8 drawn), each reading its Q, K and V;
    returns their x."""
    hx = 700
    D.step_badge(hx - 10, ys[2] + 60, 4)
    D.text(hx + 50, 34, f"{h} heads in parallel", size=12, weight="bold")
    show = list(range(min(h, 8)))
    hh = (ys[2] + 40 - ys[0]) / len(show)
    for r, k in enumerate(show):
        D.box(
            hx,
            ys[0] + r * hh + 2,
            100,
            hh - 6,
            f"head {k + 1}",
            COLORS["attention"],
            size=11.5,
            weight=None,
            sw=1.1,
        )
    for (n, col), y in zip(_QKV_COLORS.items(), ys):
        D.arrow(
            [(556 + min(h, 8) * 5 + 60, y + 20), (hx - 4, y + 20)], color=col, sw=1.3
        )
    D.text(
        hx + 6,
        ys[2] + 64,
        "softmax(Q_i K_i^T / √d_k) V_i",
        size=11,
        color="#444444",
        anchor="start",
    )
    return hx


def _concat_and_output(D: Diagram, yc: float, h: int, hx: float) -> None:
    """multi_head's step 5: the heads' outputs concatenated, then W^O, giving Z."""
    ink2 = "#444444"
    cx = 830
    D.step_badge(cx + 10, yc - 75, 5)
    D.arrow([(hx + 100, yc), (cx - 2, yc)])
    seg = 90 / min(h, 8)
    for k in range(min(h, 8)):
        D.rect(
            cx,
            yc - 45 + k * seg,
            40,
            seg,
            stroke=COLORS["attention"],
            fill=light(COLORS["attention"], 0.08 + 0.05 * (k % 2)),
            sw=0.9,
            rx=0,
        )
    D.text(cx + 20, yc + 62, "concat", size=11.5, weight="bold")
    D.text(cx + 20, yc + 77, _shape("B", "L", "h·d_k"), size=10.5, color=ink2)
    D.arrow([(cx + 40, yc), (cx + 60, yc)])
    D.box(
        cx + 62,
        yc - 30,
        60,
        60,
        "W^O",
        COLORS["output"],
        sub="d → d",
        code="out_proj",
        size=13,
    )
    D.arrow([(cx + 122, yc), (cx + 150, yc)])
    D.text(cx + 150, yc - 10, "Z", size=14, weight="bold", anchor="end")
    D.text(
        cx + 150, yc + 44, _shape("B", "L", "d"), size=10.5, color=ink2, anchor="end"
    )


# ---- chapter 4: what is added, and RoPE against the additive form --------------------
def positional_sum(
    embedding_row: Sequence[float],
    pe_row: Sequence[float],
    d_model: int,
    pos: int,
    token: str,
    dropout: float,
) -> Diagram:
    """The encoder's input at one position: the scaled embedding plus the positional
    encoding, then dropout. The strips show the first values of the real vectors (blue <
    0 < brown)."""
    n = len(embedding_row)
    c = 22
    scale = math.sqrt(d_model)
    D = Diagram(
        980,
        210,
        "What the first layer receives: scaled embedding plus position",
        f"The embedding row of '{token}' (first {n} of its {d_model} numbers) is"
        f" multiplied by the square root of d_model = {scale:.1f}, the sinusoidal"
        f" encoding of position {pos} is added element by element, and dropout with"
        f" probability {dropout} is applied before the first layer.",
    )
    emb = [v * scale for v in embedding_row]
    s = [a + b for a, b in zip(emb, pe_row)]
    vmax = max(1e-9, max(abs(v) for v in emb + list(pe_row) + s))
    rows = [
        (
            "E[" + token.replace("_", " ") + "] · √d_model",
            emb,
            COLORS["embedding"],
            f"embedding × {scale:.1f}",
        ),
        (f"PE[{pos}]", list(pe_row), COLORS["position"], "sin / cos of the position"),
        ("sum", s, COLORS["output"], ""),
    ]
    x0 = 250
    for k, (name, vals, col, note) in enumerate(rows):
        y = 30 + k * 58
        D.text(x0 - 14, y + 15, name, anchor="end", color=col, weight="bold")
        D.cells(
            x0,
            y,
            1,
            n,
            c,
            fill=lambda i, j, v=vals: _diverging(v[j], vmax),
            stroke=col,
            text=lambda i, j, v=vals: f"{v[j]:.2f}",
            text_size=8,
        )
        D.text(
            x0 + n * c + 14,
            y + 15,
            f"… {d_model} numbers",
            anchor="start",
            size=11.5,
            color="#444444",
        )
        if note:
            D.text(
                x0 - 14,
                y + 31,
                note,
                anchor="end",
                size=10.5,
                color="#444444",
                markup=False,
            )
    D.text(x0 + n * c / 2, 30 + 58 - 10, "+", size=18, weight="bold")
    D.line(x0, 30 + 2 * 58 - 10, x0 + n * c, 30 + 2 * 58 - 10, color=INK, sw=1.5)
    D.arrow(
        [(x0 + n * c + 150, 30 + 2 * 58 + 11), (x0 + n * c + 200, 30 + 2 * 58 + 11)]
    )
    D.box(
        x0 + n * c + 202,
        30 + 2 * 58 - 12,
        120,
        46,
        f"dropout {dropout}",
        COLORS["norm"],
        sub="then layer 1",
        size=12,
    )
    D.text(
        490,
        202,
        "Element-wise sum: one d_model-vector per position; nothing is concatenated.",
        size=11.5,
        color="#444444",
    )
    return D


def rope_vs_additive(theta: float = 0.5, pos: int = 3, m: int = 1) -> Diagram:
    """Two 2-D pictures side by side: the additive encoding moves a vector (x + p), RoPE
    turns one (q, k) pair of coordinates by an angle proportional to its position."""
    D = Diagram(
        980,
        360,
        "Additive positions against rotary positions",
        "Left: the additive encoding adds a position vector p to the token vector x,"
        " changing both its direction and its length. Right: RoPE rotates each pair of"
        " coordinates of the query by pos times theta and of the key by m times theta"
        f" (here pos = {pos}, m = {m}, theta = {theta}); lengths are kept and the angle"
        " between the rotated query and key changes by (pos - m) theta, so their dot"
        " product depends on the positions only through pos - m.",
    )
    ink2 = "#444444"
    # left panel
    ox, oy, R = 170, 220, 120
    D.text(ox + 60, 28, "additive (sinusoidal, learned)", weight="bold")
    D.line(ox - 140, oy, ox + 230, oy, color="#BBBBBB")
    D.line(ox, oy + 110, ox, oy - 170, color="#BBBBBB")
    x = (0.9 * R, -0.35 * R)
    p = (-0.25 * R, -0.75 * R)
    D.arrow(
        [(ox, oy), (ox + x[0], oy + x[1])],
        color=COLORS["embedding"],
        sw=2.2,
        label="x (token)",
        label_xy=(ox + x[0] + 6, oy + x[1] + 14),
    )
    D.arrow(
        [(ox + x[0], oy + x[1]), (ox + x[0] + p[0], oy + x[1] + p[1])],
        color=COLORS["position"],
        sw=2.2,
        label="p_{pos}",
        label_xy=(ox + x[0] + p[0] / 2 + 8, oy + x[1] + p[1] / 2 + 4),
    )
    D.arrow(
        [(ox, oy), (ox + x[0] + p[0], oy + x[1] + p[1])],
        color=COLORS["output"],
        sw=2.2,
        dash=True,
        label="x + p_{pos}",
        label_xy=(ox + x[0] + p[0] - 104, oy + x[1] + p[1] + 4),
    )
    D.text(ox + 50, oy + 90, "added once, at the input", size=11.5, color=ink2)
    D.text(ox + 50, oy + 106, "length and direction both change", size=11.5, color=ink2)
    # right panel
    ox2 = 700
    D.text(ox2, 28, "rotary (RoPE): a rotation of q and k", weight="bold")
    D.line(ox2 - 170, oy, ox2 + 170, oy, color="#BBBBBB")
    D.line(ox2, oy + 110, ox2, oy - 170, color="#BBBBBB")
    D.raw(
        f'<circle cx="{ox2}" cy="{oy}" r="{R}" fill="none" stroke="#DDDDDD"'
        ' stroke-dasharray="3 3"/>'
    )
    a_q, a_k = 0.35, 0.95  # starting angles of q and k
    for name, a0, steps, col in (
        ("q", a_q, pos, COLORS["query"]),
        ("k", a_k, m, COLORS["key"]),
    ):
        x0_, y0_ = ox2 + R * math.cos(a0), oy - R * math.sin(a0)
        a1 = a0 + steps * theta
        x1_, y1_ = ox2 + R * math.cos(a1), oy - R * math.sin(a1)
        D.arrow([(ox2, oy), (x0_, y0_)], color=light(col, 0.5), sw=1.8)
        D.text(
            x0_ + 10,
            y0_ + 4,
            name,
            color=light(col, 0.7),
            anchor="start",
            weight="bold",
        )
        D.arrow([(ox2, oy), (x1_, y1_)], color=col, sw=2.4)
        lab = f"R({steps}θ) {name}"
        D.text(
            x1_ + (8 if x1_ > ox2 else -8),
            y1_ - 6,
            lab,
            color=col,
            anchor="start" if x1_ > ox2 else "end",
            weight="bold",
        )
        r = R * (0.42 if name == "q" else 0.6)
        large = 1 if steps * theta > math.pi else 0
        D.raw(
            f'<path d="M{_f(ox2 + r * math.cos(a0))},{_f(oy - r * math.sin(a0))}'
            f" A{_f(r)},{_f(r)} 0 {large} 0"
            f' {_f(ox2 + r * math.cos(a1))},{_f(oy - r * math.sin(a1))}" fill="none"'
            f' stroke="{col}" stroke-width="1.3" marker-end="url(#{D._marker(col)})"/>'
        )
    D.text(
        ox2,
        oy + 90,
        f"q at position {pos} turns by {pos}θ, k at position {m} by {m}θ (θ = {theta})",
        size=11.5,
        color=ink2,
    )
    D.text(
        ox2,
        oy + 106,
        "lengths unchanged; q·k depends on pos − m only",
        size=11.5,
        color=ink2,
    )
    D.text(
        ox2,
        oy + 122,
        "one angle θ_i per pair of coordinates (2i, 2i+1), inside every attention"
        " layer",
        size=11.5,
        color=ink2,
    )
    return D


# ---- chapter 5: which cells each mask removes ----------------------------------------
def mask_grids(
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    masks: Mapping[str, Sequence[Sequence[bool]]],
) -> Diagram:
    """The masks as grids, queries as rows and keys as columns (as in every heatmap):
    removed cells (False) dark with a cross, kept cells (True) white. `masks` maps a
    title to an `(L_q, L_k)` boolean matrix (e.g. `mask[0, 0].tolist()` of the library's
    masks)."""
    Lq, Lk = len(query_tokens), len(key_tokens)
    c = 30
    pw = 110 + Lk * c
    D = Diagram(
        30 + pw * len(masks),
        132 + Lq * c + 60,
        "Which cells each mask removes",
        "Grids with one row per query and one column per key. "
        + " ".join(
            f"{t}: removes {sum(not v for row in m for v in row)} of {Lq * Lk} cells."
            for t, m in masks.items()
        ),
    )
    for k, (title, m) in enumerate(masks.items()):
        x0, y0 = 30 + k * pw + 80, 112
        if len(m) != Lq or any(len(r) != Lk for r in m):
            raise ValueError(f"mask {title!r} must be {Lq} x {Lk}")
        D.text(x0 + Lk * c / 2, 30, title, weight="bold", markup=False)
        kept = sum(v for row in m for v in row)
        D.text(
            x0 + Lk * c / 2,
            47,
            f"{kept} of {Lq * Lk} cells kept",
            size=11.5,
            color="#444444",
        )
        D.cells(
            x0,
            y0,
            Lq,
            Lk,
            c,
            fill=lambda i, j: "#FFFFFF" if m[i][j] else COLORS["mask"],
            stroke="#B0B0B0",
            text=lambda i, j: "" if m[i][j] else "×",
            text_size=16,
            text_color=lambda i, j: "#FFFFFF",
        )
        for i, t in enumerate(query_tokens):
            D.text(
                x0 - 6,
                y0 + (i + 0.62) * c,
                t,
                size=11.5,
                color=COLORS["query"],
                anchor="end",
                markup=False,
            )
        for j, t in enumerate(key_tokens):
            D.raw(
                f'<text x="{_f(x0 + (j + 0.6) * c)}" y="{_f(y0 - 6)}" font-size="11.5"'
                f' fill="{COLORS["key"]}" transform="rotate(-60'
                f' {_f(x0 + (j + 0.6) * c)} {_f(y0 - 6)})">{escape(t)}</text>'
            )
        D.text(
            x0 + Lk * c / 2,
            y0 + Lq * c + 22,
            "key (attended to)",
            size=11.5,
            color=COLORS["key"],
        )
        D.raw(
            f'<text x="{_f(x0 - 62)}" y="{_f(y0 + Lq * c / 2)}" font-size="11.5"'
            f' fill="{COLORS["query"]}" text-anchor="middle" transform="rotate(-90'
            f' {_f(x0 - 62)} {_f(y0 + Lq * c / 2)})">query (attending)</text>'
        )
    D.rect(30, D.height - 24, 14, 14, stroke="#B0B0B0", fill="#FFFFFF", rx=0, sw=0.8)
    D.text(50, D.height - 13, "may attend (True)", size=11.5, anchor="start")
    D.rect(
        200, D.height - 24, 14, 14, stroke="#B0B0B0", fill=COLORS["mask"], rx=0, sw=0.8
    )
    D.text(220, D.height - 13, "removed (False → weight 0)", size=11.5, anchor="start")
    return D


# ---- chapter 6: post-LN and pre-LN; what LayerNorm and BatchNorm average over --------
def _layer_column(D: Diagram, x: float, y: float, pre: bool, w: float = 200) -> float:
    """One encoder layer drawn top to bottom; returns the bottom y."""
    D.text(x + w / 2, y, "x " + _shape("B", "L", "d"), size=12)
    yy = y + 8
    items: list[tuple[str, Optional[str], Optional[str]]] = []
    for sub, sub_name, sub_col in (
        ("attn", "multi-head self-attention", COLORS["attention"]),
        ("ffn", "feed-forward network", COLORS["ffn"]),
    ):
        if pre:
            items += [
                ("norm", "LayerNorm", COLORS["norm"]),
                (sub, sub_name, sub_col),
                ("add", None, None),
            ]
        else:
            items += [
                (sub, sub_name, sub_col),
                ("add", None, None),
                ("norm", "LayerNorm", COLORS["norm"]),
            ]
    res_start: Optional[float] = yy
    for kind, name, col in items:
        if kind == "add":
            # set at the start or by the box before this sum
            assert res_start is not None
            D.arrow([(x + w / 2, yy), (x + w / 2, yy + 14)])
            cy = yy + 26
            D.circle(x + w / 2, cy, 11, stroke=INK, fill="#FFFFFF")
            D.text(x + w / 2, cy + 5, "+", size=15, weight="bold")
            # residual from res_start
            D.arrow(
                [
                    (x + w / 2, res_start + 6),
                    (x + w + 26, res_start + 6),
                    (x + w + 26, cy),
                    (x + w / 2 + 12, cy),
                ],
                color=MUTED,
                sw=1.3,
            )
            yy = cy + 11
            res_start = yy if pre else None
            continue
        D.arrow([(x + w / 2, yy), (x + w / 2, yy + 14)])
        bh = 36 if kind != "norm" else 28
        D.box(x, yy + 16, w, bh, name, col, size=12.5, weight=None)
        if res_start is None:
            res_start = yy + 16 + bh + 2
        yy += 16 + bh
    D.arrow([(x + w / 2, yy), (x + w / 2, yy + 16)])
    D.text(x + w / 2, yy + 30, "to the next layer " + _shape("B", "L", "d"), size=12)
    return yy + 30


def encoder_layer_ln() -> Diagram:
    """An encoder layer, post-LN (the paper) and pre-LN, side by side, with residual
    paths."""
    D = Diagram(
        760,
        430,
        "An encoder layer, post-LN and pre-LN",
        "Two columns. Post-LN, as in the paper: self-attention, add the residual,"
        " LayerNorm, then feed-forward, add the residual, LayerNorm. Pre-LN: LayerNorm"
        " first, then self-attention, add the residual; LayerNorm, feed-forward, add"
        " the residual. In pre-LN the residual path from the input to the output passes"
        " through no normalisation, and the stack ends with one final LayerNorm.",
    )
    D.text(
        160, 26, "post-LN (the paper, norm_first=False)", weight="bold", markup=False
    )
    D.text(560, 26, "pre-LN (norm_first=True)", weight="bold", markup=False)
    _layer_column(D, 60, 56, pre=False)
    b = _layer_column(D, 460, 56, pre=True)
    D.text(
        560,
        b + 22,
        "+ one final LayerNorm after the last layer",
        size=11.5,
        color="#444444",
    )
    D.text(
        160, b + 22, "LayerNorm sits on the residual path", size=11.5, color="#444444"
    )
    D.line(380, 40, 380, 410, color="#DDDDDD")
    return D


def norm_axes(lengths: Sequence[int] = (5, 3, 4), d: int = 6) -> Diagram:
    """A (B, L, d) activation drawn as B sheets of d features x L positions: the cells
    over which LayerNorm and BatchNorm compute one mean and variance; padded positions
    hatched."""
    c = 18
    batch, length = len(lengths), max(lengths)
    sheet = length * c + 16
    pw = batch * sheet
    D = Diagram(
        2 * pw + 170,
        130 + d * c + 60,
        "What LayerNorm and BatchNorm average over",
        f"A batch of activations of shape (B, L, d) = ({batch}, {length}, {d}), drawn"
        f" as {batch} sheets, one per sentence, each with L positions as columns and d"
        f" features as rows; the sentences have {', '.join(map(str, lengths))} real"
        " tokens and the rest is padding (hatched). LayerNorm computes a mean and"
        " variance over the d features of one position of one sentence, so padding"
        " never enters a real position's statistics. BatchNorm computes them for one"
        " feature over all B times L positions of the batch, padded positions"
        " included.",
    )
    D.raw(
        '<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse"'
        ' patternTransform="rotate(45)"><rect width="6" height="6"'
        ' fill="#F2F2F2"/><line x1="0" y1="0" x2="0" y2="6" stroke="#9A9A9A"'
        ' stroke-width="2"/></pattern>'
    )
    hi = light(COLORS["norm"], 0.6)
    for panel, (title, note) in enumerate(
        (
            ("LayerNorm", "one mean and variance per (b, l): over the d features"),
            (
                "BatchNorm",
                "one mean and variance per feature: over all B × L positions",
            ),
        )
    ):
        x0 = 60 + panel * (pw + 60)
        D.text(x0 + pw / 2, 26, title, weight="bold", size=14)
        D.text(x0 + pw / 2, 44, note, size=11.5, color="#444444")
        y0 = 80
        for b in range(batch):
            bx = x0 + b * sheet
            for l in range(length):
                for f in range(d):
                    pad = l >= lengths[b]
                    on = (b == 0 and l == 1) if panel == 0 else (f == 2)
                    fill = "url(#hatch)" if pad else (hi if on else "#FFFFFF")
                    D.raw(
                        f'<rect x="{_f(bx + l * c)}" y="{_f(y0 + f * c)}" width="{c}"'
                        f' height="{c}" fill="{fill}" stroke="#B5B5B5"'
                        ' stroke-width="0.8"/>'
                    )
            D.text(
                bx + length * c / 2,
                y0 + d * c + 16,
                f"sentence {b + 1}",
                size=10.5,
                color="#444444",
            )
            if panel == 1:
                D.rect(
                    bx - 1,
                    y0 + 2 * c - 1,
                    length * c + 2,
                    c + 2,
                    stroke="#222222",
                    sw=1.8,
                    rx=0,
                )
        if panel == 0:
            D.rect(x0 + c - 1, y0 - 1, c + 2, d * c + 2, stroke="#222222", sw=1.8, rx=0)
        D.text(
            x0 + pw / 2 - 8, y0 + d * c + 36, "L positions per sentence →", size=11.5
        )
        D.raw(
            f'<text x="{_f(x0 - 12)}" y="{_f(y0 + d * c / 2)}" font-size="11.5"'
            f' text-anchor="middle" transform="rotate(-90 {_f(x0 - 12)}'
            f' {_f(y0 + d * c / 2)})">d features →</text>'
        )
    ly = D.height - 16
    D.rect(60, ly - 11, 14, 14, stroke="#B5B5B5", fill="url(#hatch)", rx=0, sw=0.8)
    D.text(80, ly, "padding", size=11.5, anchor="start")
    D.rect(160, ly - 11, 14, 14, stroke="#222222", fill=hi, rx=0, sw=1.6)
    D.text(180, ly, "the cells of one mean and variance", size=11.5, anchor="start")
    return D


# ---- chapter 7: the whole model; the three ways of using attention; decoder inputs ---
# whole_model's layout: the encoder's column at x = 40 and the decoder's at x = 560,
# each 400 wide; layers 46 high with 8 between them, the stacks starting at y = 170.
_ENC_X, _DEC_X, _COL_W = 40, 560, 400
_LAYER_H, _LAYER_GAP, _STACK_TOP = 46, 8, 170


def whole_model(config, href: Optional[Mapping[str, str]] = None) -> Diagram:
    """The encoder-decoder Transformer of `config` (a
    `transformer_lib.TransformerConfig`): embeddings, positions, N encoder layers, N
    decoder layers each reading the encoder's final output, the (tied) output layer;
    each part with its chapter and `transformer_lib` name."""
    c = config
    Ne, Nd = c.n_encoder_layers, c.n_decoder_layers
    H = _STACK_TOP + max(Ne, Nd) * (_LAYER_H + _LAYER_GAP) + 242
    D = Diagram(
        1030,
        H,
        "The whole Transformer",
        "Left, the encoder: source tokens (B, S), the embedding times the square root"
        f" of d = {c.d_model}, the sinusoidal positional encoding, then {Ne} encoder"
        " layers, each self-attention then a feed-forward network, giving the memory"
        " of shape (B, S, d). Right, the decoder: the target shifted right (B, T),"
        f" embedding and positions, then {Nd} decoder layers, each masked"
        " self-attention, cross-attention whose keys and values come from the"
        " encoder's final output, and a feed-forward network; then the output"
        f" layer{' (tied to the target embedding)' if c.tie_output else ''} gives"
        f" logits (B, T, V) and a softmax gives probabilities. h = {c.n_heads}, d_ff ="
        f" {c.d_ff}.",
    )
    ink2 = "#444444"
    for x, what, shape, name in (
        (_ENC_X, "source tokens", _shape("B", "S"), "src"),
        (_DEC_X, "target shifted right: <bos> y_1 … y_{T−1}", _shape("B", "T"), "tgt"),
    ):
        _model_input(D, x, what, shape, name)
    for x, col, N, kind in (
        (_ENC_X, COLORS["encoder"], Ne, "enc"),
        (_DEC_X, COLORS["decoder"], Nd, "dec"),
    ):
        _layer_stack(D, x, col, N, kind)
    _memory_bus(D, Ne)
    _output_layer(D, Nd, c.tie_output, c.share_embeddings)
    D.text(
        _ENC_X,
        H - 34,
        "attention: ch 1–3 · masks: ch 5 · dropout: ch 8 · decoding: ch 10 · training:"
        " ch 11",
        size=11.5,
        color=ink2,
        anchor="start",
    )
    D.text(
        _ENC_X,
        H - 14,
        f"Transformer(TransformerConfig(d_model={c.d_model}, n_heads={c.n_heads}, "
        f"n_encoder_layers={Ne}, n_decoder_layers={Nd}, d_ff={c.d_ff}, ...))   (ch 7)",
        size=11.5,
        color=ink2,
        mono=True,
        anchor="start",
    )
    return D


def _chip(D: Diagram, x: float, y: float, s: str) -> None:
    """A small rounded label, e.g. a chapter number."""
    D.rect(
        x, y - 11, 8 * len(s) + 10, 16, stroke="#999999", fill="#FFFFFF", rx=8, sw=0.9
    )
    D.text(x + 4 * len(s) + 5, y + 1, s, size=10, color="#444444", markup=False)


def _model_input(D: Diagram, x: float, what: str, shape: str, name: str) -> None:
    """whole_model's input of one side (`name` "src" or "tgt"): the tokens, the
    embedding times √d plus the positions, down to the stack."""
    w = _COL_W
    D.box(
        x + 60,
        20,
        w - 120,
        34,
        what,
        COLORS["output"],
        sub=None,
        size=12.5,
        weight=None,
        sw=1.1,
    )
    D.text(x + w - 50, 42, shape, size=11, anchor="start", color="#444444")
    D.arrow([(x + w / 2, 54), (x + w / 2, 72)])
    D.box(
        x,
        74,
        w / 2 - 10,
        52,
        "embedding × √d",
        COLORS["embedding"],
        sub=None,
        code=f"{name}_embed",
        size=12.5,
    )
    D.text(x + w / 2, 106, "+", size=16, weight="bold")
    D.box(
        x + w / 2 + 10,
        74,
        w / 2 - 10,
        52,
        "positions + dropout",
        COLORS["position"],
        code="PositionalEncoding",
        size=12.5,
    )
    if name == "src":
        _chip(D, x + w - 40, 70, "ch 4")
    D.arrow(
        [(x + w / 2, 126), (x + w / 2, _STACK_TOP - 12)],
        label=_shape("B", "S" if name == "src" else "T", "d"),
        label_xy=(x + w / 2 + 8, 148),
    )


def _layer_stack(D: Diagram, x: float, col: str, N: int, kind: str) -> None:
    """whole_model's N encoder (`kind` "enc") or decoder ("dec") layers in a frame, with
    the frame's label."""
    top, lh, gap, w = _STACK_TOP, _LAYER_H, _LAYER_GAP, _COL_W
    stack_h = N * (lh + gap) + 48
    D.rect(
        x - 8, top - 14, w + 16, stack_h, stroke=col, fill=light(col, 0.06), rx=8, sw=2
    )
    label = (
        f"Encoder: {N} × EncoderLayer   (ch 6)"
        if kind == "enc"
        else f"Decoder: {N} × DecoderLayer   (ch 7)"
    )
    D.text(
        x + w / 2, top + N * (lh + gap) + 10, label, size=11.5, color=col, weight="bold"
    )
    names = "MultiHeadAttention · PositionwiseFeedForward"
    D.text(
        x + w / 2, top + N * (lh + gap) + 26, names, size=10, color="#444444", mono=True
    )
    for i in range(N):
        y = top + i * (lh + gap)
        _stack_layer(D, x, y, col, kind, i)
        if i < N - 1:
            D.arrow(
                [(x + w / 2, y + lh), (x + w / 2, y + lh + gap)], sw=1.1, head=False
            )


def _stack_layer(D: Diagram, x: float, y: float, col: str, kind: str, i: int) -> None:
    """One layer of whole_model's stacks: its number and sublayers; a decoder layer's
    cross-attention reads the memory bus."""
    lh, w = _LAYER_H, _COL_W
    D.rect(x, y, w, lh, stroke=col, fill=light(col, 0.14), rx=5, sw=1.2)
    D.text(x + 5, y + 13, f"{i + 1}", size=10, color=col, anchor="start", weight="bold")
    if kind == "enc":
        parts = [
            ("self-attention", COLORS["attention"], "MultiHeadAttention"),
            ("feed-forward", COLORS["ffn"], "PositionwiseFeedForward"),
        ]
    else:
        parts = [
            ("masked self-attn", COLORS["attention"], "MultiHeadAttention"),
            ("cross-attention", COLORS["key"], "MultiHeadAttention"),
            ("feed-forward", COLORS["ffn"], "PositionwiseFeedForward"),
        ]
    pw = (w - 24 - 8 * (len(parts) - 1)) / len(parts)
    for k, (t, pc, code) in enumerate(parts):
        px = x + 18 + k * (pw + 8)
        bh = lh - 10 if kind == "enc" else lh - 17
        D.box(px, y + 4, pw, bh, t, pc, size=11.5, weight=None, sw=1.1)
        if kind == "dec" and k == 1:
            # keys and values from the memory bus, under the self-attention box
            D.arrow(
                [
                    (_DEC_X - 40, y + lh - 5),
                    (px + 22, y + lh - 5),
                    (px + 22, y + bh + 5),
                ],
                color=COLORS["key"],
                sw=1.4,
            )


def _memory_bus(D: Diagram, Ne: int) -> None:
    """whole_model's memory: the encoder's final output, carried to every decoder
    layer."""
    top, lh, gap, w, ex, dx = _STACK_TOP, _LAYER_H, _LAYER_GAP, _COL_W, _ENC_X, _DEC_X
    mem_y = top + Ne * (lh + gap) + 60
    D.arrow([(ex + w / 2, top + Ne * (lh + gap) + 34), (ex + w / 2, mem_y - 2)])
    D.box(
        ex + 80,
        mem_y,
        w - 160,
        42,
        "memory",
        COLORS["encoder"],
        sub=_shape("B", "S", "d") + ": the encoder's final output",
        size=12.5,
    )
    bus_x = dx - 40
    D.line(ex + w - 80, mem_y + 21, bus_x, mem_y + 21, color=COLORS["key"], sw=2.2)
    D.line(bus_x, mem_y + 21, bus_x, top + lh / 2, color=COLORS["key"], sw=2.2)
    D.text(
        ex + w - 72,
        mem_y + 40,
        "keys and values for the cross-attention",
        size=11,
        color=COLORS["key"],
        anchor="start",
    )
    D.text(
        ex + w - 72,
        mem_y + 54,
        "of every decoder layer",
        size=11,
        color=COLORS["key"],
        anchor="start",
    )


def _output_layer(
    D: Diagram, Nd: int, tie_output: bool, share_embeddings: bool
) -> None:
    """whole_model's output layer and softmax, and (when tied) the matrix it shares."""
    top, lh, gap, w, dx = _STACK_TOP, _LAYER_H, _LAYER_GAP, _COL_W, _DEC_X
    oy = top + Nd * (lh + gap) + 60
    D.arrow(
        [(dx + w / 2, top + Nd * (lh + gap) + 34), (dx + w / 2, oy - 2)],
        label=_shape("B", "T", "d"),
        label_xy=(dx + w / 2 + 8, oy - 10),
    )
    D.box(
        dx + 40,
        oy,
        w - 80,
        42,
        "output layer: Linear d → V",
        COLORS["output"],
        code="output",
        size=12.5,
    )
    D.arrow(
        [(dx + w / 2, oy + 42), (dx + w / 2, oy + 62)],
        label="logits " + _shape("B", "T", "V"),
        label_xy=(dx + w / 2 + 8, oy + 57),
    )
    D.box(
        dx + 90,
        oy + 64,
        w - 180,
        40,
        "softmax → next-token probabilities",
        COLORS["output"],
        size=12,
        weight=None,
        sub="ch 10 decodes, ch 11 trains",
    )
    if tie_output:
        tx = dx + w + 22
        D.arrow(
            [
                (dx + w - 40, oy + 21),
                (tx, oy + 21),
                (tx, 64),
                (dx + w / 4 - 5, 64),
                (dx + w / 4 - 5, 72),
            ],
            color=COLORS["embedding"],
            dash=True,
            sw=1.4,
            both=True,
        )
        caption = (
            "shared: src_embed, tgt_embed and the output layer are one (V, d) matrix"
            if share_embeddings
            else "tied: the output layer and tgt_embed are one (V, d) matrix"
        )
        D.raw(
            f'<text x="{_f(tx + 12)}" y="{_f((64 + oy) / 2)}" font-size="11"'
            f' fill="{COLORS["embedding"]}" '
            f'text-anchor="middle" transform="rotate(90 {_f(tx + 12)}'
            f' {_f((64 + oy) / 2)})">'
            f"{caption}</text>"
        )


def three_ways() -> Diagram:
    """The paper's three uses of multi-head attention (§3.2.3) as a table-picture."""
    D = Diagram(
        900,
        262,
        "Three ways the model uses multi-head attention",
        "A table. Encoder self-attention: queries, keys and values from the encoder,"
        " source padding mask. Decoder self-attention: queries, keys and values from"
        " the decoder, causal and target padding mask. Cross-attention (encoder-decoder"
        " attention): queries from the decoder, keys and values from the encoder's"
        " final output, source padding mask.",
    )
    enc, dec = COLORS["encoder"], COLORS["decoder"]
    cols = [
        (20, "attention"),
        (250, "queries from"),
        (430, "keys and values from"),
        (660, "mask"),
    ]
    for x, t in cols:
        D.text(x, 26, t, anchor="start", weight="bold", size=12.5)
    rows = [
        (
            "encoder self-attention",
            ("encoder", enc),
            ("encoder", enc),
            "padding",
            "source padding",
        ),
        (
            "decoder self-attention",
            ("decoder", dec),
            ("decoder", dec),
            "both",
            "causal AND target padding",
        ),
        (
            "cross-attention",
            ("decoder", dec),
            ("encoder output (memory)", enc),
            "padcols",
            "source padding",
        ),
    ]
    for r, (name, q, kv, mkind, mtext) in enumerate(rows):
        y = 48 + r * 70
        D.line(20, y - 8, 880, y - 8, color="#E2E2E2")
        D.text(20, y + 26, name, anchor="start", size=12.5)
        D.box(250, y + 6, 150, 30, q[0], q[1], size=12, weight=None)
        D.rect(254, y + 10, 6, 22, stroke=COLORS["query"], fill=COLORS["query"], rx=1)
        D.box(430, y + 6, 200, 30, kv[0], kv[1], size=12, weight=None)
        D.rect(434, y + 10, 6, 22, stroke=COLORS["key"], fill=COLORS["key"], rx=1)
        D.rect(442, y + 10, 6, 22, stroke=COLORS["value"], fill=COLORS["value"], rx=1)
        n, cc = 4, 12

        def keep(i, j, mk=mkind):
            if mk == "both":
                return j <= i and j < 3
            return j < 3

        D.cells(
            660,
            y,
            n,
            n,
            cc,
            fill=lambda i, j: "#FFFFFF" if keep(i, j) else COLORS["mask"],
            stroke="#B0B0B0",
        )
        D.text(720, y + 28, mtext, anchor="start", size=12)
    D.text(
        450,
        254,
        "mask grids: query rows × key columns; dark = removed (last key is padding)",
        size=11,
        color="#444444",
    )
    return D


def decoder_inputs(
    tokens: Sequence[str], bos: str = "<bos>", eos: str = "<eos>"
) -> Diagram:
    """The decoder's input in training (the whole right-shifted target at once) and in
    inference (one token per step, the input growing)."""
    T = len(tokens)
    c = 72 if T <= 4 else 60
    cw = 52 if T <= 4 else 44
    steps = T + 1
    ix = 40 + (T + 1) * c + 50
    D = Diagram(
        max(1000, ix + 52 + (steps + 1) * cw + 30),
        110 + steps * 46 + 30,
        "The decoder's input: training against inference",
        "Left, training with teacher forcing: the decoder reads the whole target"
        f" shifted right, {bos} {' '.join(tokens[:-1])}, in one pass, and predicts"
        f" {' '.join(tokens)} {eos} at all {T + 1} positions at once; the causal mask"
        " stops each position from seeing later ones. Right, inference: the decoder"
        f" starts from {bos} alone and reads its own previous outputs, one more token"
        f" per step, {steps} steps.",
    )
    dec = COLORS["decoder"]
    seq_in = [bos] + list(tokens)
    seq_out = list(tokens) + [eos]
    D.text(
        40 + (T + 1) * c / 2, 26, "training: teacher forcing, one pass", weight="bold"
    )
    D.text(
        40 + (T + 1) * c / 2,
        44,
        "input = target shifted right; all positions at once",
        size=11.5,
        color="#444444",
    )
    x0 = 40
    for j, t in enumerate(seq_in):
        D.box(x0 + j * c, 70, c - 6, 30, t, dec, size=11.5, weight=None, sw=1.1)
    D.rect(
        x0 - 6,
        110,
        len(seq_in) * c,
        44,
        stroke=COLORS["attention"],
        fill=light(COLORS["attention"], 0.1),
        sw=1.4,
    )
    D.text(
        x0 + len(seq_in) * c / 2 - 3,
        137,
        "decoder with the causal mask: one pass",
        size=12,
    )
    for j, t in enumerate(seq_out):
        D.arrow(
            [(x0 + j * c + (c - 6) / 2, 100), (x0 + j * c + (c - 6) / 2, 110)],
            sw=1,
            head=False,
        )
        D.arrow(
            [(x0 + j * c + (c - 6) / 2, 154), (x0 + j * c + (c - 6) / 2, 166)], sw=1
        )
        D.box(
            x0 + j * c,
            168,
            c - 6,
            30,
            t,
            COLORS["output"],
            size=11.5,
            weight=None,
            sw=1.1,
        )
    D.text(
        x0 + len(seq_in) * c / 2,
        220,
        "predicted: the target itself, compared with the loss",
        size=11.5,
        color="#444444",
    )
    # inference
    D.text(
        ix + 52 + (steps + 1) * cw / 2,
        26,
        "inference: one token per step",
        weight="bold",
    )
    D.text(
        ix + 52 + (steps + 1) * cw / 2,
        44,
        "input = its own previous outputs; it grows by one",
        size=11.5,
        color="#444444",
    )
    for s in range(steps):
        y = 70 + s * 46
        D.text(ix, y + 20, f"step {s + 1}", size=11.5, anchor="start", color="#444444")
        for j in range(s + 1):
            D.box(
                ix + 52 + j * cw,
                y,
                cw - 6,
                30,
                seq_in[j],
                dec,
                size=11,
                weight=None,
                sw=1.1,
                fill=light(dec, 0.3) if j == s else None,
            )
        D.arrow(
            [
                (ix + 52 + (s + 1) * cw - 2, y + 15),
                (ix + 52 + (s + 1) * cw + 22, y + 15),
            ]
        )
        D.box(
            ix + 52 + (s + 1) * cw + 24,
            y,
            cw - 6,
            30,
            seq_out[s],
            COLORS["output"],
            size=11,
            weight="bold",
            sw=1.1,
        )
        if s < steps - 1:
            D.arrow(
                [
                    (ix + 52 + (s + 1) * cw + 24 + (cw - 6) / 2, y + 30),
                    (ix + 52 + (s + 1) * cw + (cw - 6) / 2, y + 46),
                ],
                color=MUTED,
                sw=1,
                dash=True,
            )
    D.text(
        D.width / 2,
        D.height - 12,
        "The causal mask makes the one-pass training outputs equal to the step-by-step"
        " ones (chapters 5 and 7).",
        size=11.5,
        color="#444444",
    )
    return D


# ---- chapter 10: the key/value cache; a beam-search tree -----------------------------
def kv_cache(n_layers: int, n_heads: int, d_k: int, src_len: int, step: int) -> Diagram:
    """What an incremental decoder stores per layer at generation step `step` (tokens so
    far)."""
    c = 16
    D = Diagram(
        980,
        120 + n_layers * 70 + 40,
        "The key/value cache",
        f"For each of the {n_layers} decoder layers: the self-attention keys and values"
        f" of the {step - 1} tokens already generated are stored, shape (B, h, t, d_k),"
        " and each step appends one new column computed from the newest token; the"
        " cross-attention keys and values are computed once from the encoder output,"
        f" shape (B, h, S, d_k) with S = {src_len}, and reused at every step. The new"
        " token's query is the only query computed.",
    )
    ink2 = "#444444"
    D.text(
        40,
        28,
        f"at step t = {step}: one new query per layer attends to the cache",
        anchor="start",
        weight="bold",
    )
    kc = COLORS["key"]
    for x, fill, t in (
        (40, light(kc, 0.2), "stored at earlier steps"),
        (220, kc, "added this step"),
        (360, light(kc, 0.7), "computed once from the encoder output, before step 1"),
        (750, COLORS["query"], "the new query"),
    ):
        D.rect(
            x,
            36,
            14,
            14,
            stroke=kc if x != 750 else COLORS["query"],
            fill=fill,
            rx=0,
            sw=0.8,
        )
        D.text(x + 20, 47, t, size=11.5, anchor="start", color=ink2)
    y0 = 80
    D.text(
        190,
        y0,
        "self-attention cache: t = " + str(step) + " keys and values",
        size=12,
        weight="bold",
    )
    D.text(190, y0 + 15, "(B, h, t, d_k) each, one more per step", size=11, color=ink2)
    D.text(
        650,
        y0,
        f"cross-attention: S = {src_len} keys and values",
        size=12,
        weight="bold",
    )
    D.text(650, y0 + 15, "(B, h, S, d_k) each, fixed", size=11, color=ink2)
    for i in range(n_layers):
        y = y0 + 34 + i * 70
        D.text(
            40,
            y + 28,
            f"layer {i + 1}",
            anchor="start",
            weight="bold",
            color=COLORS["decoder"],
        )
        D.rect(
            100,
            y + 14,
            16,
            16,
            stroke=COLORS["query"],
            fill=COLORS["query"],
            rx=0,
            sw=0.8,
        )
        D.text(108, y + 46, "q_t", size=11, color=COLORS["query"])
        for k, (name, col) in enumerate((("K", COLORS["key"]), ("V", COLORS["value"]))):
            x = 140 + k * (step * c + 40)
            D.cells(
                x,
                y + 14 - k * 0,
                1,
                step,
                c,
                fill=lambda a, j, cl=col: light(cl, 0.2) if j < step - 1 else cl,
                stroke=col,
            )
            D.text(x + step * c / 2, y + 8, name, size=11.5, color=col, weight="bold")
            x2 = 560 + k * (src_len * c + 40)
            D.cells(
                x2,
                y + 14,
                1,
                src_len,
                c,
                fill=lambda a, j, cl=col: light(cl, 0.7),
                stroke=col,
            )
            D.text(
                x2 + src_len * c / 2, y + 8, name, size=11.5, color=col, weight="bold"
            )
    D.text(
        490,
        D.height - 14,
        f"h = {n_heads} heads, d_k = {d_k}; per step the decoder computes 1 query, 1"
        " key and 1 value per layer, not t of each",
        size=11.5,
        color=ink2,
    )
    return D


class BeamTrace:
    """Record a real `beam_search` run: wraps the `step` and `reorder` methods of
    `transformer_lib.decoding.IncrementalDecoder` (the class is passed in) for the
    duration of a `with` block, keeping each step's input tokens and log-probabilities
    and each reorder::

        with diagrams.BeamTrace(IncrementalDecoder) as trace:
            out = beam_search(model, src, beam_size=3, ...)
    """

    def __init__(self, decoder_cls) -> None:
        self.cls = decoder_cls
        # (input tokens, log-probabilities)
        self.steps: list[tuple[list[int], list[list[float]]]] = []
        self.reorders: list[list[int]] = []

    def __enter__(self) -> "BeamTrace":
        self._step, self._reorder = self.cls.step, self.cls.reorder
        trace = self

        def step(dec, tokens):
            logits = trace._step(dec, tokens)
            trace.steps.append(
                (tokens.tolist(), logits.float().log_softmax(-1).tolist())
            )
            return logits

        def reorder(dec, index):
            trace.reorders.append(index.tolist())
            return trace._reorder(dec, index)

        self.cls.step, self.cls.reorder = step, reorder
        return self

    def __exit__(self, *exc) -> None:
        self.cls.step, self.cls.reorder = self._step, self._reorder

    def tree(self, beam_size: int, eos_id: int, alpha: float) -> list[list[dict]]:
        """The candidates of every step (one source sentence): the `2 * beam_size` best
        extensions by total log-probability, each `"kept"` (the run fed it to the next
        step), `"finished"` (`<eos>` among the `beam_size` best, scored `log P / lp`) or
        `"pruned"`."""
        K = beam_size
        if len(self.reorders) and len(self.reorders[0]) != K:
            raise ValueError("trace one source sentence at a time (B = 1)")
        hyps: list[list[int]] = [[] for _ in range(K)]
        scores = [0.0] + [-math.inf] * (K - 1)
        reorders = self.reorders[1:]  # the first one only repeats the source K times
        out = []
        for t, (_, logp) in enumerate(self.steps, start=1):
            cand = sorted(
                (
                    (scores[b] + logp[b][v], b, v)
                    for b in range(K)
                    if scores[b] > -math.inf
                    for v in range(len(logp[b]))
                ),
                key=lambda c: -c[0],
            )[: 2 * K]
            kept = (
                list(zip(reorders[t - 1], self.steps[t][0]))
                if t < len(self.steps)
                else []
            )
            lp = ((5 + t) / 6) ** alpha
            step = []
            for r, (sc, b, v) in enumerate(cand):
                status = (
                    "finished"
                    if v == eos_id and r < K
                    else "kept"
                    if (b, v) in kept
                    else "pruned"
                )
                step.append(
                    {
                        "parent": b,
                        "token": v,
                        "logp": sc,
                        "status": status,
                        "score": sc / lp,
                        "prefix": hyps[b] + [v],
                    }
                )
            out.append(step)
            hyps = [hyps[b] + [v] for b, v in kept]
            scores = [scores[b] + logp[b][v] for b, v in kept]
            # a row beam search left empty (fewer than K live) has score -inf
            kept_set = {
                (c["parent"], c["token"]) for c in step if c["status"] == "kept"
            }
            scores = [
                s if (b, v) in kept_set else -math.inf
                for s, (b, v) in zip(scores, kept)
            ]
        return out


def beam_tree(
    steps: Sequence[Sequence[Mapping]],
    vocab: Mapping[int, str],
    beam_size: int,
    best: Sequence[int],
    alpha: float,
    bos: str = "<bos>",
) -> Diagram:
    """A beam-search tree from a recorded run (`BeamTrace.tree`); `best` is the returned
    output without `<bos>`. Columns are steps; kept hypotheses solid, pruned ones grey
    and dashed, finished ones outlined twice with their length-penalised score."""
    n_steps = len(steps)
    colw, rowh = 124, 46
    rows = max(len(s) for s in steps)
    best = list(best)
    D = Diagram(
        max(960, 60 + (n_steps + 1) * colw + 30),
        80 + rows * rowh + 50,
        "A beam-search tree from a real run",
        f"Beam search with beam size {beam_size} and length penalty alpha = {alpha}, as"
        " the library ran it. Columns are steps; each box is a candidate: its token"
        " and total log-probability. Kept hypotheses are solid, pruned candidates grey"
        " and dashed, finished ones (ending in <eos>) outlined twice with their"
        " length-penalised score. The returned output is"
        f" {' '.join(vocab.get(t, str(t)) for t in best)}.",
    )
    dec = COLORS["decoder"]
    ink2 = "#444444"
    y_mid = 60 + (rows * rowh) / 2
    D.box(20, y_mid - 14, 64, 28, bos, dec, size=11.5, weight=None)
    prev_pos: list[tuple[float, float]] = [(84, y_mid)]
    for t, cands in enumerate(steps):
        x = 40 + (t + 1) * colw
        D.text(x + 46, 40, f"step {t + 1}", size=11.5, color=ink2)
        kept_pos: list[tuple[float, float]] = []
        for r, cand in enumerate(cands):
            y = 60 + r * rowh
            status = cand["status"]
            on_best = (
                status != "pruned"
                and list(cand["prefix"]) == best[: len(cand["prefix"])]
            )
            col = dec if status != "pruned" else "#BBBBBB"
            px, py = (
                prev_pos[cand["parent"]]
                if cand["parent"] < len(prev_pos)
                else prev_pos[0]
            )
            D.arrow(
                [(px, py), (x - 2, y + 13)],
                color=INK if on_best else (MUTED if status != "pruned" else "#D4D4D4"),
                sw=2.2 if on_best else 1,
                head=False,
                dash=status == "pruned",
            )
            fill = (
                light(dec, 0.45)
                if on_best
                else (light(dec, 0.12) if status != "pruned" else "#F7F7F7")
            )
            D.rect(x, y, 92, 26, stroke=col, fill=fill, sw=1.2, dash=status == "pruned")
            if status == "finished":
                D.rect(x - 3, y - 3, 98, 32, stroke=dec, sw=1.0)
                D.text(
                    x + 46,
                    y + 41,
                    f"score {cand['score']:.2f}",
                    size=10,
                    color=dec,
                    markup=False,
                )
            tok = vocab.get(cand["token"], str(cand["token"]))
            D.text(
                x + 46,
                y + 17,
                f"{tok} ({cand['logp']:.2f})",
                size=11,
                markup=False,
                color=INK if status != "pruned" else "#9A9A9A",
                weight="bold" if on_best else None,
            )
            if status == "kept":
                kept_pos.append((x + 92, y + 13))
        prev_pos = kept_pos or prev_pos
    ly = D.height - 20
    items = [
        (light(dec, 0.12), dec, False, "kept"),
        ("#F7F7F7", "#BBBBBB", True, "pruned, or left when the search stopped"),
        ("#FFFFFF", dec, False, "finished: score = log P / ((5 + |Y|) / 6)^α"),
        (light(dec, 0.45), dec, False, "the returned output"),
    ]
    lx: float = 30
    for fill, stroke, dash, label in items:
        D.rect(lx, ly - 10, 26, 14, stroke=stroke, fill=fill, sw=1.0, dash=dash)
        if label.startswith("finished"):
            D.rect(lx - 3, ly - 13, 32, 20, stroke=dec, sw=0.8)
        D.text(
            lx + 34,
            ly + 1,
            label,
            size=11,
            anchor="start",
            markup=label.startswith("finished"),
        )
        lx += 44 + 6.1 * len(label)
    return D


# ---- chapter 11: the training pipeline -----------------------------------------------
def _sci(x: float) -> str:
    """1e-09 -> 10^{−9} (for _rich)."""
    e = int(round(math.log10(x)))
    return f"10^{{{'−' if e < 0 else ''}{abs(e)}}}" if x == 10.0**e else f"{x:g}"


def training_pipeline(
    vocab_size: int,
    max_tokens: int,
    smoothing: float,
    warmup: int,
    d_model: int,
    betas: Sequence[float] = (0.9, 0.98),
    eps: float = 1e-9,
) -> Diagram:
    """Text → BPE → length-sorted token-budget batches → model → label-smoothed loss →
    Adam with the warm-up schedule, each with its `transformer_lib` name."""
    D = Diagram(
        1000,
        300,
        "The training pipeline",
        "Sentence pairs of Multi30k are split into subwords by a byte-pair-encoding"
        f" tokenizer with {vocab_size} entries, sorted by length and packed into"
        f" batches of at most {max_tokens} tokens, fed to the Transformer; its logits"
        f" go into a cross-entropy loss with label smoothing {smoothing}, and Adam"
        f" (betas {betas[0]}, {betas[1]}, eps {eps:g}) updates the weights with a"
        f" learning rate that rises linearly for {warmup} steps and then decays with"
        " the inverse square root of the step.",
    )
    data, opt = COLORS["data"], COLORS["optim"]
    y = 60
    items = [
        ("sentence pairs", "Multi30k de → en", "load_multi30k", data, "11a"),
        ("subwords (BPE)", f"V = {vocab_size}", "SubwordTokenizer", data, "11a"),
        (
            "batches by length",
            f"≤ {max_tokens} tokens each",
            "TokenBatches",
            data,
            "11a",
        ),
        (
            "Transformer",
            "src (B, S), tgt (B, T)",
            "Transformer",
            COLORS["decoder"],
            "7",
        ),
    ]
    w, gap = 190, 46
    for k, (t, sub, code, col, ch) in enumerate(items):
        x = 20 + k * (w + gap)
        D.box(x, y, w, 70, t, col, sub=sub, code=code, size=13)
        D.text(x + w - 6, y - 8, f"ch {ch}", size=10.5, anchor="end", color="#444444")
        if k:
            D.arrow([(x - gap + 2, y + 35), (x - 2, y + 35)])
    y2 = 190
    items2 = [
        (
            "label-smoothed loss",
            f"ε_{{ls}} = {smoothing}",
            "label_smoothed_cross_entropy",
            COLORS["output"],
            "11b",
        ),
        (
            "Adam",
            f"β = ({betas[0]}, {betas[1]}), ε = {_sci(eps)}",
            "make_optimizer",
            opt,
            "11b",
        ),
        (
            "warm-up schedule",
            f"lr = d^{{−0.5}} · min(s^{{−0.5}}, s · {warmup}^{{−1.5}})",
            "make_scheduler",
            opt,
            "11b",
        ),
    ]
    xs, ws = [728, 448, 20], [250, 220, 340]
    for (t, sub, code, col, ch), x, ww in zip(items2, xs, ws):
        D.box(x, y2, ww, 70, t, col, sub=sub, code=code, size=13)
        D.text(
            x + ww - 6, y2 + 84, f"ch {ch}", size=10.5, anchor="end", color="#444444"
        )
    mx = 20 + 3 * (w + gap) + w / 2
    D.arrow(
        [(mx, y + 70), (mx, y2 - 2)], label="logits (B, T, V)", label_xy=(mx + 8, 150)
    )
    D.arrow(
        [(xs[0] - 2, y2 + 35), (xs[1] + ws[1] + 2, y2 + 35)],
        label="gradients",
        label_xy=((xs[0] + xs[1] + ws[1]) / 2, y2 + 28),
    )
    D.arrow(
        [(xs[2] + ws[2] + 2, y2 + 35), (xs[1] - 2, y2 + 35)],
        color=opt,
        label="lr",
        label_xy=((xs[2] + ws[2] + xs[1]) / 2, y2 + 28),
    )
    D.arrow(
        [
            (xs[1] + ws[1] / 2, y2 - 2),
            (xs[1] + ws[1] / 2, y + 104),
            (mx - 50, y + 104),
            (mx - 50, y + 72),
        ],
        color=opt,
        dash=True,
    )
    D.text(
        xs[1] + ws[1] / 2 + 8,
        y + 98,
        "update the weights; next batch",
        size=11.5,
        color=opt,
        anchor="start",
    )
    D.text(
        20,
        24,
        "one training step, repeated for every batch of every epoch",
        anchor="start",
        weight="bold",
    )
    return D


# ---- the introduction: the map of the book -------------------------------------------
CHAPTER_PAGES = {
    1: "01_qkv_attention",
    2: "02_scaling",
    3: "03_multi_head",
    4: "04_positional_encoding",
    5: "05_masking",
    6: "06_encoder",
    7: "07_decoder_cross_attention",
    8: "08_dropout",
    9: "09_parameter_counting",
    10: "10_decoding",
    11: "11a_data",
    12: "12_results_and_attention",
    13: "13_beyond",
}


def overview(
    base: str = "../chapters/", pages: Mapping[int, str] = CHAPTER_PAGES
) -> Diagram:
    """The architecture as a map of the book: every part names its chapter and, in HTML,
    links to it (`base` + page + `.html`)."""
    D = Diagram(
        1000,
        560,
        "The Transformer, and where the book builds each part",
        "An overview of the encoder-decoder Transformer. Each part is labelled with the"
        " chapter that builds it and links to it: attention (1), the scaling by the"
        " square root of d_k (2), multi-head attention (3), embeddings and positional"
        " encoding (4), masks (5), the encoder layer with feed-forward network,"
        " residuals and LayerNorm (6), the decoder, cross-attention and the full model"
        " (7), dropout (8), counting parameters (9), decoding (10), training (11),"
        " results and attention maps (12), encoder-only and decoder-only variants"
        " (13).",
        role=None,
    )  # not "img": its parts are links

    def part(ch, x, y, w, h, label, color, sub=None, size=12.5):
        D.link_open(base + pages[ch] + ".html", f"Chapter {ch}: {label}")
        D.box(x, y, w, h, label, color, sub=sub, size=size, weight=None)
        D.circle(x + w - 2, y + 2, 11, stroke=color, fill="#FFFFFF", sw=1.4)
        D.text(x + w - 2, y + 6.5, str(ch), size=11, weight="bold", color=color)
        D.link_close()

    # inputs
    part(
        4, 40, 440, 300, 44, "embedding × √d + positional encoding", COLORS["embedding"]
    )
    part(
        4,
        460,
        440,
        300,
        44,
        "embedding × √d + positional encoding",
        COLORS["embedding"],
    )
    D.text(190, 520, "source sentence (German)", size=12)
    D.text(610, 520, "target so far, shifted right (English)", size=12)
    D.arrow([(190, 506), (190, 486)])
    D.arrow([(610, 506), (610, 486)])
    _overview_encoder(D, part, base + pages[6] + ".html")
    _overview_decoder(D, part, base + pages[7] + ".html")
    # output
    part(
        7,
        470,
        40,
        280,
        50,
        "output layer (tied) → softmax",
        COLORS["output"],
        sub="probabilities of the next token",
    )
    D.arrow([(610, 118), (610, 92)])
    # side: the rest of the book
    part(9, 800, 40, 180, 44, "counting parameters", COLORS["norm"])
    part(10, 800, 110, 180, 44, "decoding: greedy, beam", COLORS["decoder"])
    part(
        11,
        800,
        180,
        180,
        56,
        "training",
        COLORS["optim"],
        sub="data, recipe, CLI (11a–c)",
    )
    part(12, 800, 262, 180, 56, "results", COLORS["output"], sub="BLEU, attention maps")
    part(13, 800, 344, 180, 56, "beyond", COLORS["encoder"], sub="BERT-, GPT-style")
    part(2, 40, 40, 300, 44, "why divide by √d_k", COLORS["attention"])
    part(1, 40, 100, 300, 44, "queries, keys and values", COLORS["query"])
    D.text(
        500,
        548,
        "Numbers in circles are chapters; click a part to open its chapter.",
        size=11.5,
        color="#444444",
    )
    return D


def _overview_encoder(D: Diagram, part: Callable[..., None], href: str) -> None:
    """overview's encoder layer (its title links to `href`, chapter 6) and its parts."""
    enc = COLORS["encoder"]
    D.rect(30, 180, 320, 240, stroke=enc, fill=light(enc, 0.06), sw=2, rx=8)
    D.link_open(href, "Chapter 6: the encoder")
    D.text(190, 200, "encoder layer × N", weight="bold", color=enc)
    D.link_close()
    part(
        3,
        50,
        340,
        280,
        50,
        "multi-head self-attention",
        COLORS["attention"],
        sub="scaled dot-product: ch 1, 2",
    )
    part(6, 50, 270, 280, 44, "add & LayerNorm, feed-forward", COLORS["ffn"])
    part(8, 50, 214, 280, 40, "dropout at four sites", COLORS["norm"])
    D.arrow([(190, 438), (190, 392)])


def _overview_decoder(D: Diagram, part: Callable[..., None], href: str) -> None:
    """overview's decoder layer (its title links to `href`, chapter 7), its parts and
    the encoder's memory feeding its cross-attention."""
    dec = COLORS["decoder"]
    D.rect(450, 120, 320, 300, stroke=dec, fill=light(dec, 0.06), sw=2, rx=8)
    D.link_open(href, "Chapter 7: the decoder and the full model")
    D.text(610, 140, "decoder layer × N", weight="bold", color=dec)
    D.link_close()
    part(5, 470, 350, 280, 44, "masked self-attention", COLORS["mask"])
    part(
        7,
        470,
        282,
        280,
        50,
        "cross-attention",
        COLORS["key"],
        sub="Q from decoder, K and V from encoder",
    )
    part(6, 470, 220, 280, 44, "add & LayerNorm, feed-forward", COLORS["ffn"])
    part(8, 470, 160, 280, 40, "dropout", COLORS["norm"])
    D.arrow([(610, 438), (610, 396)])
    D.arrow(
        [(190, 180), (190, 160), (400, 160), (400, 307), (468, 307)],
        color=COLORS["key"],
        sw=2,
    )
    D.text(300, 152, "memory", size=11.5, color=COLORS["key"])
