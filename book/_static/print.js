/* The book on paper. Before a browser prints a page, this opens the folded code cells, moves the
   hints and solutions (the solution's code cells with it) to the end of their chapter, breaks
   every code line wider than the column with a hanging ↪ (the source copies back exactly: a line
   that starts with ↪ joins the line above), puts under every widget the address of the
   web page where it is live (print.css hides its controls: it prints as a still figure of its
   first state), prints chapter 12b's translator as one example and shrinks display equations
   wider than the column; after printing, the page is put back. `make pdf` (scripts/make_pdf.py)
   calls bookPrint.book() on the whole book built as one page: the same, plus a title page, the
   contents, chapter headings one level up (the PDF's bookmarks), links kept inside the PDF (to the
   heading of the section they name, citations to the bibliography) and the rest to the web site. */
(() => {
  "use strict";
  const ZH = (document.documentElement.lang || "").toLowerCase().startsWith("zh");
  const WORDS = ZH ? {
    answers: "提示与解答", moved: "见本章末尾", live: "可交互的版本在网页上：", example: "示例",
    contents: "目录", edition: "中文版", commit: (c, d) => `提交 ${c}，${d}`, web: "网页版：",
  } : {
    answers: "Hints and solutions", moved: "at the end of the chapter", live: "Live, and interactive, on the web page: ",
    example: "An example", contents: "Contents", edition: "English edition",
    commit: (c, d) => `Commit ${c}, ${d}`, web: "On the web: ",
  };
  // The text column of an A4 page with 20 mm margins, in CSS pixels (make_pdf.py prints so):
  // equations are fitted to it when the page is not yet laid out for print.
  const PRINT_COLUMN_PX = 643;
  const WRAP = "\u21aa";          // ↪: the line above goes on here
  const undo = [];                 // what puts the page back, newest last
  let site = "";                   // the web edition's address (make pdf); else this page's own
  let prepared = false;

  const el = (tag, attrs = {}, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    e.append(...kids);
    return e;
  };
  function replace(old, node) { old.replaceWith(node); undo.push(() => node.replaceWith(old)); }
  function place(node, where, how) { where[how](node); undo.push(() => node.remove()); }
  function style(node, prop, value) {
    const before = node.style[prop];
    node.style[prop] = value;
    undo.push(() => { node.style[prop] = before; });
  }

  // A chapter is a page's top section; in the one-page book, a section the contents include.
  const isChapter = (s) => s.tagName === "SECTION" && s.parentElement.matches("article.bd-article, .toctree-wrapper");
  const chapters = () => [...document.querySelectorAll("article.bd-article section")].filter(isChapter);
  function chapterOf(node) {
    for (let s = node.closest("section"); s; s = s.parentElement.closest("section")) if (isChapter(s)) return s;
    return null;
  }
  function address(chapter) {
    const mark = chapter && chapter.previousElementSibling;
    if (site && mark && mark.id.startsWith("document-")) return `${site}${mark.id.slice(9)}.html`;
    if (site) return `${site}${document.documentElement.dataset.printRoot || ""}.html`;
    return location.href.split("#")[0];
  }
  const liveLine = (chapter, text = WORDS.live) => {
    const url = address(chapter);
    return el("p", { class: "print-live print-only" }, text, el("a", { href: url }, url));
  };

  // Folds print open, and as plain blocks: Chromium does not start an open <details> on a page it
  // has not room on for the whole fold, and left the page before it nearly empty.
  function openFolds() {
    for (const d of document.querySelectorAll("article.bd-article details")) {
      const div = el("div", { class: `${d.className} print-unfolded` });
      if (d.id) div.id = d.id;
      div.append(...d.childNodes);
      d.replaceWith(div);
      undo.push(() => { d.append(...div.childNodes); div.replaceWith(d); });
    }
  }

  function hintsToEnd() {
    let n = 0;
    for (const chapter of chapters()) {
      const own = [...chapter.querySelectorAll("details.sd-dropdown")].filter((d) => chapterOf(d) === chapter);
      if (!own.length) continue;
      const title = chapter.querySelector(":scope > h1, :scope > h2, :scope > h3");
      const level = Math.min(6, Number(title ? title.tagName[1] : 1) + 1);
      const end = el("section", { class: "print-answers print-only", id: `${chapter.id}-print-answers` },
        el(`h${level}`, {}, WORDS.answers));
      for (const d of own) {
        d.id = d.id || `print-answer-${++n}`;
        // a solution's code: the folded code cells right after its dropdown go with it
        const code = [];
        for (let next = d.nextElementSibling; next && next.matches("div.cell.tag_hide-cell"); next = next.nextElementSibling) code.push(next);
        const name = d.querySelector("summary .sd-summary-text, summary").textContent.trim();
        replace(d, el("p", { class: "print-moved print-only" }, el("a", { href: `#${d.id}` }, name), ` (${WORDS.moved})`));
        end.append(d);
        for (const cell of code) {
          const mark = document.createComment("print-moved cell");
          cell.replaceWith(mark);
          undo.push(() => mark.replaceWith(cell));
          end.append(cell);
        }
      }
      place(end, chapter, "append");
    }
  }

  function widgets() {
    const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
    for (const output of new Set([...views].map((s) => s.closest(".cell_output") || s.parentElement))) {
      const shown = output.querySelector(".widget-subarea");
      // a progress bar has nothing to interact with; sliders draw no <input> (noUiSlider's divs)
      const controls = shown && shown.querySelector("input, select, button, textarea, .widget-slider, .widget-hslider, "
        + ".widget-vslider, .widget-dropdown, .widget-toggle-buttons, .widget-play, .widget-radio, .widget-checkbox");
      if (shown && !controls) continue;
      place(liveLine(chapterOf(output)), output, "after");
    }
  }

  function translator() {
    const box = document.getElementById("translator");
    if (!box) return;
    const output = document.getElementById("tr-output");
    if (box.dataset.state === "done" && output) {
      const sentence = output.dataset.read || document.getElementById("tr-input").value;
      place(el("p", { class: "print-example print-only" }, el("strong", {}, `${WORDS.example}: `),
        el("em", {}, sentence), " → ", el("em", {}, output.textContent)), box, "append");
    }
    place(liveLine(chapterOf(box)), box, "append");
  }

  function fitEquations() {                  // all sizes read first, then all set: one layout, not one per equation
    const print = matchMedia("print").matches;
    const sizes = [...document.querySelectorAll('mjx-container[display="true"]')].filter((eq) => eq.getClientRects().length)
      .map((eq) => {
        const natural = eq.querySelector("mjx-math").getBoundingClientRect().width / (Number(eq.style.zoom) || 1);
        const room = eq.getBoundingClientRect().width;
        return [eq, natural, print ? room : Math.min(room, PRINT_COLUMN_PX)];
      });
    for (const [eq, natural, room] of sizes) {
      if (natural > room) style(eq, "zoom", String(Math.floor((room / natural) * 1000) / 1000 - 0.005));
    }
  }

  // Code lines wider than the printed column, broken by this script rather than by the browser: at
  // the last space of the line's room where there is one (the rest starts with it), else at the
  // room's end but never after a space; the rest on the next line, indented (the line's own indent
  // and 3 more, at most half the room), after a ↪. Copied out of the PDF, a line that starts with
  // ↪ joins the line above without the ↪: the source comes back exactly.
  const WIDE = /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/;
  const columns = (text) => [...text].reduce((n, c) => n + (WIDE.test(c) ? 2 : 1), 0);
  function breaks(line, room) {           // [offset, hanging indent] of each break in `line`
    const found = [];
    const indent = Math.min(line.length - line.trimStart().length + 3, Math.floor(room / 2));
    let start = 0, avail = room;
    while (columns(line.slice(start)) > avail) {
      let end = start, used = 0;                        // the most characters that fit in `avail` columns
      while (end < line.length && used + columns(line[end]) <= avail) used += columns(line[end++]);
      let cut = -1;
      for (let q = end; q > start + avail / 2; q--) if (line[q] === " " && line[q - 1] !== " ") { cut = q; break; }
      if (cut < 0) { cut = end; while (cut > start + 1 && line[cut - 1] === " ") cut--; }
      found.push([cut, indent]);
      start = cut;
      avail = room - indent - 1;
    }
    return found;
  }
  let wrapped = 0, codeCharPx = 0;              // lines broken; the code's character width
  function wrapCode() {
    if (!matchMedia("print").matches) return;           // the print layout's widths, or nothing
    const pres = [...document.querySelectorAll("article.bd-article pre")].filter((p) => p.getClientRects().length);
    if (!pres.length) return;
    const probe = el("span", { style: "white-space: pre" }, "0".repeat(200));   // one line, however wide
    pres[0].append(probe);
    const charWidth = probe.getBoundingClientRect().width / 200;
    codeCharPx = charWidth;
    probe.remove();
    const rooms = pres.map((pre) => {
      const cs = getComputedStyle(pre);
      return Math.floor((pre.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)) / charWidth + 0.02);
    });
    pres.forEach((pre, i) => {
      const nodes = [];
      const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
      const text = nodes.map((n) => n.data).join("");
      const cuts = [];                                   // [offset in text, indent]
      let at = 0;
      for (const line of text.split("\n")) {
        for (const [cut, indent] of breaks(line, rooms[i])) cuts.push([at + cut, indent]);
        at += line.length + 1;
      }
      if (!cuts.length) return;
      const starts = [];
      nodes.reduce((offset, n) => { starts.push(offset); return offset + n.data.length; }, 0);
      let k = nodes.length - 1;
      for (const [offset, indent] of cuts.reverse()) {
        while (k > 0 && starts[k] >= offset) k--;   // the node holding the character before the break
        const node = nodes[k];
        const rest = node.splitText(offset - starts[k]);
        const mark = el("span", { class: "print-wrap" }, "\n" + " ".repeat(indent) + WRAP);
        rest.before(mark);
        wrapped++;
        undo.push(() => { const parent = mark.parentNode; mark.remove(); parent.normalize(); });
      }
    });
  }

  // An output with no text (a stream that printed only a newline) would print an empty frame.
  function emptyOutputs() {
    for (const pre of document.querySelectorAll("article.bd-article div.cell_output pre")) {
      if (pre.textContent.trim()) continue;
      const box = pre.closest("div.output") || pre;
      box.style.setProperty("display", "none", "important");    // over print.css's display: block !important
      undo.push(() => box.style.removeProperty("display"));
    }
  }

  function prepare() {
    if (prepared) return;
    prepared = true;
    emptyOutputs();
    hintsToEnd();
    openFolds();
    widgets();
    translator();
    fitEquations();
    wrapCode();
  }

  function restore() {
    while (undo.length) undo.pop()();
    prepared = false;
  }

  // ---- the one-page book of `make pdf` ------------------------------------------------------------
  function headingsUp() {                    // singlehtml nests every page under the introduction's h1
    for (const chapter of document.querySelectorAll(".toctree-wrapper > section")) {
      for (const h of chapter.querySelectorAll("h2, h3, h4, h5, h6")) {
        const up = el(`h${Number(h.tagName[1]) - 1}`);
        for (const a of h.attributes) up.setAttribute(a.name, a.value);
        up.append(...h.childNodes);
        h.replaceWith(up);
      }
    }
  }

  // A section's link lands on its heading: the section's own box starts on the page before when the
  // section starts a page (its break pushes the heading, not the box's top, onto the next).
  function headingOf(target) {
    const h = target && target.matches("section") ? target.querySelector(":scope > h1, :scope > h2, :scope > h3, :scope > h4, :scope > h5, :scope > h6") : null;
    if (!h) return target;
    h.id = h.id || `${target.id}-heading`;
    return h;
  }
  // The document (a chapter's or a front page's name) a node belongs to: the mark before its top section.
  function documentOf(node) {
    for (let s = node.closest("section"); s; s = s.parentElement.closest("section")) {
      const mark = s.previousElementSibling;
      if (mark && mark.id && mark.id.startsWith("document-")) return mark.id.slice(9);
    }
    return document.documentElement.dataset.printRoot || "";
  }
  function linksInside() {                   // links to the book's other pages: to their place here
    const ids = new Map();                   // ids the single page holds more than once (Sphinx's id1, id2, …)
    for (const e of document.querySelectorAll("article.bd-article [id]")) ids.set(e.id, (ids.get(e.id) || 0) + 1);
    const entries = new Map();               // a cited id -> its bibliography entry
    for (const a of document.querySelectorAll("article.bd-article a[href]")) {
      const href = a.getAttribute("href");
      const m = href.match(/^(?:\.\.\/|\.\/)*((?:book|chapters)\/[\w.-]+?)\.(?:html|ipynb|md)(?:#(.*))?$/);
      if (!m) {
        // any other relative link (a download, the PDFs beside the book): to the web site, not to the
        // print server's address the browser would resolve it against
        if (site && !href.startsWith("#") && !/^[a-z][a-z0-9+.-]*:/i.test(href)) {
          const base = /^\.\.?\//.test(href) ? `${site}${documentOf(a)}.html` : site;
          a.setAttribute("href", new URL(href, base).href);
        }
        continue;
      }
      const mark = document.getElementById(`document-${m[1]}`);
      const page = mark && mark.nextElementSibling;
      const id = m[2] && decodeURIComponent(m[2]);
      let target = null;
      if (id && a.closest(".bibtex-citation")) {          // a citation: its entry in the bibliography
        // the entry: role doc-biblioentry (older docutils) or listitem (docutils 0.21), class "citation"
        target = entries.get(id) || document.querySelector(`.citation[id="${CSS.escape(id)}"], [role="doc-biblioentry"][id="${CSS.escape(id)}"]`);
        if (target && ids.get(id) > 1 && target.id === id) { target.id = `print-bib-${id}`; ids.set(target.id, 1); }
        if (target) entries.set(id, target);          // the next citation of it finds it renamed
      }
      if (!target && id) target = (page && page.querySelector(`[id="${CSS.escape(id)}"]`)) || document.getElementById(id);
      if (!target) target = page;
      target = headingOf(target);
      if (target && target.id) a.setAttribute("href", `#${target.id}`);
    }
  }

  const headingText = (h) => {
    const copy = h.cloneNode(true);
    copy.querySelectorAll(".headerlink").forEach((x) => x.remove());
    return copy.textContent.trim();
  };

  // A heading as the PDF's bookmark names it: its text, with its maths as plain Unicode (MathJax
  // draws the symbols from its stylesheet, which a bookmark, from the page's text, would lose).
  const SUP = { 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹", "-": "⁻", "+": "⁺", n: "ⁿ", T: "ᵀ" };
  const SYMBOLS = { cdot: "·", times: "×", infty: "∞", pi: "π", top: "ᵀ", to: "→", alpha: "α", beta: "β", gamma: "γ",
    epsilon: "ε", theta: "θ", lambda: "λ", mu: "μ", sigma: "σ", tau: "τ", leq: "≤", geq: "≥", approx: "≈", ne: "≠",
    sum: "∑", log: "log", exp: "exp", max: "max", min: "min", ldots: "…", dots: "…", in: "∈", ell: "ℓ" };
  function texText(tex) {
    let t = tex.replace(/\\(?:text|mathrm|mathbf|operatorname|mathit)\s*\{([^{}]*)\}/g, "$1")
      .replace(/\\sqrt\s*\{([^{}]*)\}/g, (_, x) => (x.length > 1 ? `√(${x})` : `√${x}`))
      .replace(/\\([A-Za-z]+)/g, (all, name) => SYMBOLS[name] ?? name)
      .replace(/\^\{?([-+0-9nT]+)\}?/g, (all, x) => ([...x].every((c) => SUP[c]) ? [...x].map((c) => SUP[c]).join("") : all));
    return t.replace(/[{}]/g, "").replace(/\\[,;! ]/g, " ").replace(/\s+/g, " ").trim();
  }
  function bookmarkText(h) {
    const copy = h.cloneNode(true);
    copy.querySelectorAll(".headerlink, mjx-assistive-mml").forEach((x) => x.remove());
    const items = window.MathJax?.startup?.document?.getMathItemsWithin?.(h) || [];
    const maths = [...copy.querySelectorAll("mjx-container")];
    maths.forEach((m, i) => m.replaceWith(items[i] ? texText(items[i].math) : m.textContent));
    return copy.textContent.replace(/\s+/g, " ").trim();
  }
  function headingsForBookmarks() {
    return [...document.querySelectorAll("article.bd-article :is(h1, h2, h3, h4, h5, h6)")]
      .filter((h) => h.getClientRects().length).map((h) => {
        const plain = h.cloneNode(true);                // what the browser's own bookmark reads: no maths
        plain.querySelectorAll(".headerlink, mjx-container").forEach((x) => x.remove());
        return { level: Number(h.tagName[1]), text: bookmarkText(h), plain: plain.textContent.replace(/\s+/g, " ").trim() };
      });
  }

  function contents(parts, root) {
    const captions = [...document.querySelectorAll(".bd-docs-nav p.caption .caption-text")].map((c) => c.textContent.trim());
    const list = el("ul");
    const entry = (section) => {
      const title = headingOf(section);
      const sections = [...section.querySelectorAll(":scope > section > h2")].map((h) =>
        el("li", {}, el("a", { href: `#${headingOf(h.parentElement).id}` }, headingText(h))));
      return el("li", { class: "print-chapter" }, el("a", { href: `#${title.id}` }, headingText(title)),
        sections.length ? el("ul", { class: "print-sections" }, ...sections) : "");
    };
    list.append(entry(document.querySelector("article.bd-article > section")));
    parts.forEach((docs, i) => {
      list.append(el("li", { class: "print-part" }, captions[i] || ""));
      for (const doc of docs) {
        const section = document.getElementById(`document-${doc}`)?.nextElementSibling;
        if (section) { section.classList.add("print-chapter-start"); list.append(entry(section)); }
      }
    });
    return el("section", { class: "print-contents", id: "print-contents" }, el("h1", {}, WORDS.contents), list);
  }

  // meta: {title, commit, date, site (the web edition's address), root (its first page), parts (_toc.yml)}
  function book(meta) {
    document.documentElement.classList.add("print-book");
    document.documentElement.dataset.printRoot = meta.root;
    site = meta.site;
    headingsUp();
    linksInside();
    const article = document.querySelector("article.bd-article");
    const title = el("section", { class: "print-title" },
      el("p", { style: "font-size: 2.6rem; font-weight: bold; margin-bottom: 0.8em" }, meta.title),
      el("p", {}, WORDS.edition), el("p", {}, WORDS.commit(meta.commit, meta.date)),
      el("p", {}, WORDS.web, el("a", { href: meta.site }, meta.site)));
    const listed = contents(meta.parts, meta.root);
    article.prepend(title, listed);
    prepare();
    // what make pdf needs after printing: the contents' links (it writes their page numbers), the
    // headings as the bookmarks should read
    const links = (selector) => [...listed.querySelectorAll(selector)].map((a) => a.getAttribute("href").slice(1));
    return { chapters: links("li.print-chapter > a"), sections: links("ul.print-sections a"),
             headings: headingsForBookmarks(), wrapped, codeCharPx };
  }

  // ---- measured in print media, before printing (make_pdf.py reports it, tests/test_pdf.py checks it)
  function measure(withStylesheet) {
    const sheets = [...document.querySelectorAll('link[rel="stylesheet"][href*="print.css"]')];
    const zooms = [...document.querySelectorAll('mjx-container[display="true"]')].map((e) => [e, e.style.zoom]);
    if (!withStylesheet) { sheets.forEach((s) => { s.disabled = true; }); zooms.forEach(([e]) => { e.style.zoom = ""; }); }
    const column = document.querySelector("article.bd-article").getBoundingClientRect();
    const wide = (r) => r.right > column.right + 0.5 || r.left < column.left - 0.5;
    const shown = (e) => e.getClientRects().length > 0;
    const code = [...document.querySelectorAll("article.bd-article pre")].filter(shown);
    const tooWideCode = code.filter((p) => p.scrollWidth > p.clientWidth + 1 || wide(p.getBoundingClientRect()));
    const eqs = [...document.querySelectorAll('article.bd-article mjx-container[display="true"]')].filter(shown);
    const tooWideEqs = eqs.filter((e) => wide(e.getBoundingClientRect()) || wide(e.querySelector("mjx-math").getBoundingClientRect()));
    const images = [...document.querySelectorAll("article.bd-article img")].filter((i) => shown(i) && i.naturalWidth > 0);
    const result = {
      column_px: column.width, code_blocks: code.length, code_too_wide: tooWideCode.length,
      equations: eqs.length, equations_too_wide: tooWideEqs.length,
      equations_shrunk: zooms.filter(([e, z]) => z && Number(z) < 1).length,
      images: images.length,
      raster_images: new Set(images.map((i) => i.currentSrc).filter((s) => !/\.svg($|\?)/.test(s))).size,
      svg_images: new Set(images.map((i) => i.currentSrc).filter((s) => /\.svg($|\?)/.test(s))).size,
      examples: tooWideCode.slice(0, 3).map((p) => p.textContent.split("\n").find((l) => l.length > 60) || p.textContent.slice(0, 80))
        .concat(tooWideEqs.slice(0, 3).map((e) => e.getAttribute("aria-label") || e.textContent.slice(0, 80))),
    };
    sheets.forEach((s) => { s.disabled = false; });
    zooms.forEach(([e, z]) => { e.style.zoom = z; });
    return result;
  }

  // The widget embedder (@jupyter-widgets/html-manager 1.0) typesets a widget's label through
  // MathJax 2's `MathJax.Hub`; the book runs MathJax 3, which has none, and a view with a label
  // (a slider, a dropdown) then fails to draw, on the web page and in print. MathJax 3 does the job.
  document.addEventListener("DOMContentLoaded", () => {
    if (window.MathJax && !window.MathJax.Hub) {
      window.MathJax.Hub = { Queue: (job) => window.MathJax.typesetPromise?.([job[2]]).catch(() => null) };
    }
  });

  window.bookPrint = { prepare, restore, book, measure };
  window.addEventListener("beforeprint", prepare);
  window.addEventListener("afterprint", () => { if (!document.documentElement.classList.contains("print-book")) restore(); });
})();
