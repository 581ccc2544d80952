// The page's widgets, loaded when the reader comes near one (booktools.ext.web adds this file, deferred,
// to each page with widgets, in place of the widget scripts and the widgets' saved state).
//
// The ipywidgets embedder and require.js (0.9 MB compressed) and the widgets' saved state (up to
// 0.4 MB, <page>.widget-state.json beside the page) are fetched only when a widget is within a
// screen or so of the view, or when the page is printed: a reader who reads the text, or reads it
// on a slow link, does not wait for them. This script's data-state names the state file and
// data-scripts the scripts, in the order they run (require.js, widget-paths.js, the embedder).
(function () {
  "use strict";
  const me = document.currentScript;
  const views = Array.from(document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]'));
  if (!me || !views.length) return;
  let started = null;

  function run(src, attributes) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      Object.entries(attributes || {}).forEach(([name, value]) => script.setAttribute(name, value));
      script.src = src;
      script.onload = resolve;
      script.onerror = () => reject(new Error("could not load " + src));
      document.body.appendChild(script);
    });
  }

  function start() {
    if (started) return started;
    if (observer) observer.disconnect();
    started = fetch(me.dataset.state)
      .then((response) => {
        if (!response.ok) throw new Error(me.dataset.state + ": " + response.status);
        return response.text();
      })
      .then((state) => {
        const tag = document.createElement("script");
        tag.type = "application/vnd.jupyter.widget-state+json";
        tag.textContent = state;
        document.body.appendChild(tag);
        return JSON.parse(me.dataset.scripts).reduce(
          (done, script) => done.then(() => run(script.src, script.attributes)), Promise.resolve());
      })
      .catch((error) => console.error("widgets:", error));
    return started;
  }

  const observer = "IntersectionObserver" in window
    ? new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) start(); },
                               { rootMargin: "100% 0px" })
    : null;
  if (!observer) { start(); return; }
  views.forEach((view) => observer.observe(view.closest(".cell") || view.parentElement));
  window.addEventListener("beforeprint", start);
  window.bookWidgets = { load: start };
})();
