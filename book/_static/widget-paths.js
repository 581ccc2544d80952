// Where the ipywidgets embedder's own files are (booktools.ext.web loads this between require.js and
// embed-amd.js): the embedder finds its fonts beside the module it runs as, and require.js would
// otherwise place "@jupyter-widgets/..." beside the page (chapters/@jupyter-widgets/..., not there).
(function () {
  "use strict";
  const dist = new URL("../vendor/html-manager/dist/", document.currentScript.src).href.replace(/\/$/, "");
  require.config({ paths: { "@jupyter-widgets/html-manager/dist": dist, "@jupyter-widgets": dist } });
})();
