/* The book on paper. Before a browser prints a page, this opens the folded code cells, moves the
   hints and solutions to the end of their chapter, puts under every widget the address of the
   web page where it is live (print.css hides its controls: it prints as a still figure of its
   first state), prints chapter 12b's translator as one example and shrinks display equations
   wider than the column; after printing, the page is put back. `make pdf` (scripts/make_pdf.py)
   calls bookPrint.book() on the whole book built as one page: the same, plus a title page, the
   contents, chapter headings one level up (the PDF's bookmarks) and links kept inside the PDF. */
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
  // The text column of an A4 page with 15 mm margins, in CSS pixels (make_pdf.py prints so):
  // equations are fitted to it when the page is not yet laid out for print.
  const PRINT_COLUMN_PX = 680;
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

  function openFolds() {
    for (const d of document.querySelectorAll("details:not([open])")) {
      d.open = true;
      undo.push(() => { d.open = false; });
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
        const name = d.querySelector("summary .sd-summary-text, summary").textContent.trim();
        replace(d, el("p", { class: "print-moved print-only" }, el("a", { href: `#${d.id}` }, name), ` (${WORDS.moved})`));
        end.append(d);
      }
      place(end, chapter, "append");
    }
  }

  function widgets() {
    const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
    for (const output of new Set([...views].map((s) => s.closest(".cell_output") || s.parentElement))) {
      const shown = output.querySelector(".widget-subarea");
      const controls = shown && shown.querySelector("input, select, button, textarea");
      if (shown && !controls) continue;        // a progress bar: nothing to interact with
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

  function prepare() {
    if (prepared) return;
    prepared = true;
    hintsToEnd();
    openFolds();
    widgets();
    translator();
    fitEquations();
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

  function linksInside() {                   // links to the book's other pages: to their place here
    for (const a of document.querySelectorAll("article.bd-article a[href]")) {
      const m = a.getAttribute("href").match(/^(?:\.\.\/|\.\/)*((?:book|chapters)\/[\w.-]+?)\.(?:html|ipynb|md)(?:#(.*))?$/);
      if (!m) continue;
      const mark = document.getElementById(`document-${m[1]}`);
      const target = (m[2] && document.getElementById(decodeURIComponent(m[2]))) || (mark && mark.nextElementSibling);
      if (target && target.id) a.setAttribute("href", `#${target.id}`);
    }
  }

  const headingText = (h) => {
    const copy = h.cloneNode(true);
    copy.querySelectorAll(".headerlink").forEach((x) => x.remove());
    return copy.textContent.trim();
  };

  function contents(parts, root) {
    const captions = [...document.querySelectorAll(".bd-docs-nav p.caption .caption-text")].map((c) => c.textContent.trim());
    const list = el("ul");
    const entry = (section) => {
      const title = section.querySelector(":scope > h1");
      const sections = [...section.querySelectorAll(":scope > section > h2")].map((h) =>
        el("li", {}, el("a", { href: `#${h.parentElement.id}` }, headingText(h))));
      return el("li", { class: "print-chapter" }, el("a", { href: `#${section.id}` }, headingText(title)),
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
    article.prepend(title, contents(meta.parts, meta.root));
    prepare();
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
