// Where the ipywidgets embedder's own files are (booktools.ext.web loads this between require.js and
// embed-amd.js, with data-dist: the embedder's folder, the site root's vendor/ in both editions): the
// embedder finds its fonts beside the module it runs as, and require.js would otherwise place
// "@jupyter-widgets/..." beside the page (chapters/@jupyter-widgets/..., not there).
(function () {
  "use strict";
  const me = document.currentScript;
  const dist = (me.dataset.dist ? new URL(me.dataset.dist, document.baseURI)
                                : new URL("../vendor/html-manager/dist/", me.src)).href.replace(/\/$/, "");
  require.config({ paths: { "@jupyter-widgets/html-manager/dist": dist, "@jupyter-widgets": dist } });
})();
