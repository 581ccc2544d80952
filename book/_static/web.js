// The web book for every reader: what the theme leaves undone (booktools.ext.web adds this file
// to every page, deferred).
//
// 1. Sidebars below 992 px. pydata-sphinx-theme 0.17.1 hooks its sidebar dialogs to the FIRST
//    element with class primary-toggle / secondary-toggle (querySelector), which is its own header
//    button, hidden in sphinx-book-theme's layout; the button a reader sees is sphinx-book-theme's,
//    and it does nothing (pydata-sphinx-theme issue #2451). Every other toggle forwards its click to
//    the first, where the theme's handler opens the dialog, while that sidebar is not on screen.
// 2. Accessible names that match what is shown: a button whose visible words are its name loses the
//    aria-label that said something else ("Search" on "Search Ctrl+K").
// 3. Widgets drawn in the page (ipywidgets, when book/_static/widgets.js has loaded them): an image
//    gets the description of the figure its cell draws (the widget view's data-alt, which
//    booktools.ext.web writes from the cell's metadata, in the page's language), a slider's handle
//    and a dropdown get the widget's own description as their name.
(function () {
  "use strict";
  const zh = (document.documentElement.lang || "").toLowerCase().startsWith("zh");

  function forwardToggles(selector, sidebarId) {
    const toggles = Array.from(document.querySelectorAll(selector));
    const first = toggles[0];
    toggles.slice(1).forEach((button) => {
      button.addEventListener("click", (event) => {
        const sidebar = document.getElementById(sidebarId);
        const onScreen = sidebar && sidebar.offsetParent !== null && sidebar.getBoundingClientRect().width > 0;
        if (onScreen) return;           // a wide screen: the sidebar is there already
        event.preventDefault();
        event.stopPropagation();
        first.click();
      });
    });
  }

  function visibleText(el) {
    return (el.innerText || "").replace(/\s+/g, " ").trim();
  }

  function namesFromContent() {
    document.querySelectorAll("button[aria-label]").forEach((el) => {
      const shown = (el.innerText || "").replace(/\s+/g, " ").trim();
      const label = el.getAttribute("aria-label");
      if (shown && !label.toLowerCase().includes(shown.toLowerCase())) el.removeAttribute("aria-label");
    });
    // the colour-mode button's icons are pictures titled "Light", "Dark"... (Font Awesome draws
    // them when it likes): decoration, the button's name says what it does
    document.querySelectorAll(".theme-switch-button").forEach((button) => {
      const hide = () => button.querySelectorAll("svg, i").forEach((icon) => {
        icon.querySelectorAll("title").forEach((title) => title.remove());
        ["aria-labelledby", "role", "title"].forEach((a) => icon.hasAttribute(a) && icon.removeAttribute(a));
        if (!icon.hasAttribute("aria-hidden")) icon.setAttribute("aria-hidden", "true");
      });
      hide();
      new MutationObserver(hide).observe(button, { childList: true, subtree: true });
    });
  }

  // A box that scrolls sideways (a wide formula, table or output on a phone) is a Tab stop, so a
  // keyboard can scroll it; MathJax's own formulas stay out of the Tab order.
  function scrollBoxesFocusable() {
    document.querySelectorAll(".bd-article div.math, .bd-article .cell_output, .bd-article table, .bd-article .jupyter-widgets")
      .forEach((box) => {
        const s = getComputedStyle(box);
        const scrolls = ["auto", "scroll"].includes(s.overflowX) && box.scrollWidth > box.clientWidth + 1;
        if (scrolls && !box.hasAttribute("tabindex")) {
          box.setAttribute("tabindex", "0");
          box.dataset.webScroll = "1";
        } else if (!scrolls && box.dataset.webScroll) {
          box.removeAttribute("tabindex");
          delete box.dataset.webScroll;
        }
      });
  }

  function nameWidgets(root) {
    root.querySelectorAll("img.widget-image:not([alt])").forEach((img) => {
      const area = img.closest(".widget-subarea");
      const view = area && area.nextElementSibling;
      const described = view && view.dataset ? view.dataset.alt : "";
      if (described) { img.alt = described; return; }
      const box = img.closest(".widget-vbox, .widget-box, .jupyter-widgets-output-area, .cell_output") || document;
      const choice = box.querySelector("select option:checked, .widget-readout");
      const what = choice ? visibleText(choice) || choice.textContent.trim() : "";
      img.alt = (zh ? "图：" : "Figure: ") + (what ? what : (zh ? "上方控件所选的图" : "the picture the control above selects"));
    });
    root.querySelectorAll(".widget-slider, .widget-dropdown, .widget-text, .widget-checkbox").forEach((w) => {
      const label = w.querySelector(".widget-label");
      const name = label ? label.textContent.trim() : "";
      w.querySelectorAll(".ui-slider-handle, [role=slider], select, input").forEach((control) => {
        if (!control.getAttribute("aria-label") && !control.getAttribute("aria-labelledby")) {
          control.setAttribute("aria-label", name || (zh ? "控件" : "control"));
        }
      });
    });
  }

  function start() {
    forwardToggles(".primary-toggle", "pst-primary-sidebar");
    forwardToggles(".secondary-toggle", "pst-secondary-sidebar");
    namesFromContent();
    nameWidgets(document);
    window.addEventListener("load", () => {
      namesFromContent();
      const typeset = window.MathJax && MathJax.startup && MathJax.startup.promise;
      (typeset || Promise.resolve()).then(scrollBoxesFocusable);
    });
    let resized = null;
    window.addEventListener("resize", () => { clearTimeout(resized); resized = setTimeout(scrollBoxesFocusable, 200); });
    const main = document.getElementById("main-content") || document.body;
    let pending = false;
    new MutationObserver(() => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => { pending = false; nameWidgets(main); });
    }).observe(main, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
