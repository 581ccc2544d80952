// The book's trained Transformer, translating in the reader's browser (chapter 12b).
//
// Two ONNX graphs exported by transformer_lib.export: encoder.onnx (source ids -> memory) and
// decoder.onnx (the prefix and the memory -> next-token logits and the cross-attention of the
// last position). onnxruntime-web runs them in WebAssembly; @huggingface/tokenizers reads the
// same tokenizer.json as the Python SubwordTokenizer. Both libraries come from the npm registry
// at build time (`make vendor`) and are served by the book: nothing loads from the internet.
// Greedy decoding and beam search follow transformer_lib.decoding step for step.
import * as ort from "../../translator-vendor/ort/ort.wasm.bundle.min.mjs";
import { Tokenizer } from "../../translator-vendor/tokenizers/tokenizers.min.mjs";

const MODEL_DIR = new URL("model/", import.meta.url);
ort.env.wasm.wasmPaths = new URL("../../translator-vendor/ort/", import.meta.url).href;
ort.env.wasm.numThreads = 1;          // a static page is not cross-origin isolated: no threads

const $ = (id) => document.getElementById(id);

// ---- loading -----------------------------------------------------------------------------------
async function fetchJSON(name) {
  const r = await fetch(new URL(name, MODEL_DIR));
  if (!r.ok) throw new Error(`${name}: HTTP ${r.status}`);
  return r.json();
}

async function session(name) {
  const r = await fetch(new URL(name, MODEL_DIR));
  if (!r.ok) throw new Error(`${name}: HTTP ${r.status}`);
  return ort.InferenceSession.create(new Uint8Array(await r.arrayBuffer()), { executionProviders: ["wasm"] });
}

async function load() {
  const t0 = performance.now();
  const [meta, tokJson] = await Promise.all([fetchJSON("model.json"), fetchJSON("tokenizer.json")]);
  const [encoder, decoder] = await Promise.all([session(meta.files.encoder.name), session(meta.files.decoder.name)]);
  const tokenizer = new Tokenizer(tokJson, {});
  // Every character the vocabulary contains: anything else would become <unk>.
  const known = new Set(), pieces = [];
  for (const [piece, id] of Object.entries(tokJson.model.vocab)) {
    pieces[id] = piece;
    if (!/^<.*>$/.test(piece)) for (const ch of piece) known.add(ch);
  }
  return { meta, encoder, decoder, tokenizer, known, pieces, loadMs: performance.now() - t0 };
}

// ---- the model -----------------------------------------------------------------------------------
async function encode(m, srcIds) {
  const src = new ort.Tensor("int64", BigInt64Array.from(srcIds, BigInt), [1, srcIds.length]);
  return (await m.encoder.run({ src })).memory;                         // (1, S, d_model)
}

function tile(memory, n) {                                             // (1, S, d) -> (n, S, d)
  const [, S, d] = memory.dims;
  const data = new Float32Array(n * S * d);
  for (let i = 0; i < n; i++) data.set(memory.data, i * S * d);
  return new ort.Tensor("float32", data, [n, S, d]);
}

async function step(m, rows, memory) {                                 // rows: N prefixes of equal length
  const N = rows.length, T = rows[0].length;
  const flat = new BigInt64Array(N * T);
  rows.forEach((r, i) => r.forEach((t, j) => { flat[i * T + j] = BigInt(t); }));
  const out = await m.decoder.run({ tokens: new ort.Tensor("int64", flat, [N, T]), memory });
  return { logits: out.logits, cross: out.cross_attention };           // (N, V), (layers, N, h, S)
}

function crossRow(cross, i) {          // the cross-attention of row i: Float32Array (layers * h * S)
  const [L, N, h, S] = cross.dims;
  const row = new Float32Array(L * h * S);
  for (let l = 0; l < L; l++) row.set(cross.data.subarray((l * N + i) * h * S, (l * N + i + 1) * h * S), l * h * S);
  return row;
}

function argmax(a, off, n) {           // first index of the largest value, as torch.argmax
  let best = 0, v = a[off];
  for (let j = 1; j < n; j++) if (a[off + j] > v) { v = a[off + j]; best = j; }
  return best;
}

async function greedy(m, srcIds, maxLen) {
  const { bos_id, eos_id } = m.meta.special;
  const memory = await encode(m, srcIds);
  const out = [bos_id], attn = [];
  for (let t = 1; t < maxLen; t++) {
    const { logits, cross } = await step(m, [out], memory);
    const next = argmax(logits.data, 0, logits.dims[1]);
    out.push(next);
    attn.push(crossRow(cross, 0));
    if (next === eos_id) break;
  }
  return { ids: out, attn };
}

function logSoftmax(a, off, n) {                                      // in float32, as PyTorch
  let mx = -Infinity;
  for (let j = 0; j < n; j++) mx = Math.max(mx, a[off + j]);
  let sum = 0;
  for (let j = 0; j < n; j++) sum += Math.exp(a[off + j] - mx);
  const lse = mx + Math.log(sum), out = new Float32Array(n);
  for (let j = 0; j < n; j++) out[j] = a[off + j] - lse;
  return out;
}

const lengthPenalty = (len, alpha) => ((5 + len) / 6) ** alpha;        // Wu et al. (2016)

async function beam(m, srcIds, maxLen, K, alpha) {
  // transformer_lib.decoding.beam_search for one sentence: K hypotheses, 2K candidates per step,
  // finished hypotheses scored log P / lp(|Y|), early stop when no live one can win.
  const { bos_id, eos_id, pad_id } = m.meta.special;
  const memory = tile(await encode(m, srcIds), K);
  let tokens = Array.from({ length: K }, () => [bos_id]);
  let attn = Array.from({ length: K }, () => []);
  let scores = Float32Array.from({ length: K }, (_, k) => (k === 0 ? 0 : -Infinity));
  const finished = [];
  let done = false;
  const longest = maxLen - 1;
  for (let t = 1; t < maxLen; t++) {
    const { logits, cross } = await step(m, tokens, memory);
    const V = logits.dims[1];
    const cand = [];                                                 // the 2K best (score, beam, token)
    for (let k = 0; k < K; k++) {
      if (scores[k] === -Infinity) continue;
      const lp = logSoftmax(logits.data, k * V, V);
      for (let v = 0; v < V; v++) {
        const s = Math.fround(scores[k] + lp[v]);
        if (cand.length < 2 * K || s > cand[cand.length - 1][0]) {
          let i = cand.length;
          while (i > 0 && cand[i - 1][0] < s) i--;
          cand.splice(i, 0, [s, k, v]);
          if (cand.length > 2 * K) cand.pop();
        }
      }
    }
    const lpT = lengthPenalty(t, alpha);
    const newScores = new Float32Array(K).fill(-Infinity), newBeam = new Array(K).fill(0), newTok = new Array(K).fill(pad_id);
    let j = 0;
    for (let r = 0; r < cand.length && j < K; r++) {
      const [s, b, tok] = cand[r];
      if (tok === eos_id) {
        if (r < K) finished.push({ score: s / lpT, ids: [...tokens[b], eos_id], attn: [...attn[b], crossRow(cross, b)] });
        continue;
      }
      newScores[j] = s; newBeam[j] = b; newTok[j] = tok; j++;
    }
    if (finished.length) {
      const bestDone = Math.max(...finished.map((f) => f.score));
      const alive = Math.max(...newScores);
      const bound = alive / Math.max(lengthPenalty(t + 1, alpha), lengthPenalty(longest, alpha));
      if (alive === -Infinity || bestDone >= bound) done = true;
    }
    attn = newBeam.map((b) => [...attn[b], crossRow(cross, b)]);
    tokens = newBeam.map((b, k) => [...tokens[b], newTok[k]]);
    scores = newScores;
    if (done) break;
  }
  if (!done || !finished.length) {
    const lGen = tokens[0].length - 1;
    for (let k = 0; k < K; k++) {
      if (scores[k] > -Infinity) finished.push({ score: scores[k] / lengthPenalty(lGen, alpha), ids: tokens[k], attn: attn[k] });
    }
  }
  let best = finished[0];
  for (const f of finished) if (f.score > best.score) best = f;
  return best;
}

// ---- checks on the input -----------------------------------------------------------------------
// What a person types or pastes, written the way the Multi30k captions are: Unicode NFC (one code
// point for "ü", never "u" + a combining diaeresis), one plain space between words (newlines,
// tabs, no-break and thin spaces, runs of them), nothing at either end, and the few typographic
// variants the captions never use replaced by the ones they do. Only what is still unknown after
// this is refused.
const VARIANTS = [[/[\u2014\u2012\u2015\u2212]/g, "\u2013"],       // em dash, figure dash, minus -> en dash
  [/[\u2010\u2011]/g, "-"],                                        // hyphen, no-break hyphen -> "-"
  [/[\u00bb\u00ab]/g, (q) => (q === "\u00bb" ? "\u201e" : "\u201c")],   // »German« -> „German“
  [/[\u201a\u2032\u00b4]/g, "'"], [/\u2026/g, "..."]];              // low single quote, prime, acute; ellipsis
function normaliseInput(text) {
  let t = text.normalize("NFC").replace(/\s+/gu, " ").trim();
  for (const [pattern, to] of VARIANTS) t = t.replace(pattern, to);
  return t;
}

function checkInput(m, raw) {
  const text = normaliseInput(raw);
  if (!text) return { error: "Type a German sentence first." };
  const unknown = [...new Set([...text].filter((ch) => ch !== " " && !m.known.has(ch)))];
  if (unknown.length) {
    return { error: `The model has never seen ${unknown.length === 1 ? "this character" : "these characters"}: ` +
      `${unknown.map((c) => `“${c}”`).join(" ")}. Its vocabulary holds only the characters of the Multi30k ` +
      `training captions; remove ${unknown.length === 1 ? "it" : "them"} and try again.` };
  }
  const ids = m.tokenizer.encode(text, { add_special_tokens: false }).ids;
  if (ids.includes(m.meta.special.unk_id)) return { error: "Part of this text maps to the unknown token <unk>; rephrase it." };
  ids.push(m.meta.special.eos_id);                                 // the source ends with <eos>, as in training
  const limit = m.meta.config.max_len;
  if (ids.length > limit) {
    return { error: `This text is ${ids.length} tokens long (with <eos>); the model reads at most ${limit} ` +
      `(its max_len: the positional encoding has no more positions). It was trained on captions of at most ` +
      `${m.meta.training.max_sentence_tokens} tokens: try one sentence.` };
  }
  return { ids, text };
}

// ---- drawing the cross-attention ---------------------------------------------------------------
const VIRIDIS = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"];
function viridis(x) {                                               // x in [0, 1]
  const p = Math.min(Math.max(x, 0), 1) * (VIRIDIS.length - 1), i = Math.floor(p), f = p - i;
  if (i >= VIRIDIS.length - 1) return VIRIDIS[VIRIDIS.length - 1];
  const c = (h) => [1, 3, 5].map((k) => parseInt(h.slice(k, k + 2), 16));
  const a = c(VIRIDIS[i]), b = c(VIRIDIS[i + 1]);
  return `rgb(${a.map((v, k) => Math.round(v + f * (b[k] - v))).join(",")})`;
}

function attentionMatrix(m, rows, srcLen, choice) {                  // choice: "layer:head" or "layer:mean"
  const { n_heads: h } = m.meta.config;
  const [layer, head] = choice.split(":");
  const l = Number(layer);
  return rows.map((row) => {
    const out = new Float32Array(srcLen);
    const heads = head === "mean" ? [...Array(h).keys()] : [Number(head)];
    for (const hd of heads) for (let s = 0; s < srcLen; s++) out[s] += row[(l * h + hd) * srcLen + s] / heads.length;
    return out;
  });
}

const SVG = "http://www.w3.org/2000/svg";
function el(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function drawAttention(container, matrix, xLabels, yLabels, title, colors) {
  const cell = 26, left = 34 + 7.5 * Math.max(...yLabels.map((s) => s.length)), top = 40;
  const bottom = 14 + 7.5 * Math.max(...xLabels.map((s) => s.length)) + 28;
  const W = Math.max(left + cell * xLabels.length + 90, 20 + 8 * title.length), H = top + cell * yLabels.length + bottom;
  const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", class: "tr-map" });
  svg.appendChild(el("title", {}, title));
  svg.appendChild(el("text", { x: 12, y: 18, class: "tr-map-title" }, title));
  const vmax = Math.max(1e-9, ...matrix.map((r) => Math.max(...r)));
  matrix.forEach((row, i) => row.forEach((w, j) => {
    const r = el("rect", { x: left + j * cell, y: top + i * cell, width: cell, height: cell, fill: viridis(w / vmax) });
    r.appendChild(el("title", {}, `${yLabels[i]} → ${xLabels[j]}: ${w.toFixed(3)}`));
    svg.appendChild(r);
  }));
  yLabels.forEach((s, i) => svg.appendChild(el("text", { x: left - 6, y: top + i * cell + cell / 2 + 4, "text-anchor": "end", class: "tr-tok" }, s)));
  xLabels.forEach((s, j) => {
    const x = left + j * cell + cell / 2 + 4, y = top + yLabels.length * cell + 8;
    svg.appendChild(el("text", { x, y, transform: `rotate(-90 ${x} ${y})`, "text-anchor": "end", class: "tr-tok" }, s));
  });
  const y0 = top + yLabels.length * cell + bottom - 8;
  svg.appendChild(el("text", { x: left + (cell * xLabels.length) / 2, y: y0, "text-anchor": "middle", fill: colors.key, class: "tr-axis" }, "source token (key, attended to)"));
  const yl = top + (cell * yLabels.length) / 2;
  svg.appendChild(el("text", { x: 16, y: yl, transform: `rotate(-90 16 ${yl})`, "text-anchor": "middle", fill: colors.query, class: "tr-axis" }, "output token (query)"));
  const bx = left + cell * xLabels.length + 20, bh = cell * yLabels.length;         // colour bar
  for (let k = 0; k < 50; k++) svg.appendChild(el("rect", { x: bx, y: top + bh * (1 - (k + 1) / 50), width: 14, height: bh / 50 + 0.5, fill: viridis((k + 0.5) / 50) }));
  svg.appendChild(el("text", { x: bx + 18, y: top + 10, class: "tr-tok" }, vmax.toFixed(2)));
  svg.appendChild(el("text", { x: bx + 18, y: top + bh, class: "tr-tok" }, "0"));
  container.replaceChildren(svg);
}

// ---- the page ------------------------------------------------------------------------------------
async function main() {
  const root = $("translator");
  if (!root) return;
  const status = $("tr-status"), output = $("tr-output"), go = $("tr-go"), input = $("tr-input");
  const method = $("tr-method"), mapChoice = $("tr-map-choice"), map = $("tr-attention");
  let m;
  try {
    m = await load();
  } catch (e) {
    status.textContent = `The model could not be loaded: ${e.message}`;
    root.dataset.state = "error";
    return;
  }
  const { config } = m.meta;
  for (let l = config.n_decoder_layers - 1; l >= 0; l--) {
    mapChoice.appendChild(new Option(`decoder layer ${l + 1}, mean of the ${config.n_heads} heads`, `${l}:mean`));
    for (let hd = 0; hd < config.n_heads; hd++) mapChoice.appendChild(new Option(`decoder layer ${l + 1}, head ${hd + 1}`, `${l}:${hd}`));
  }
  const examples = $("tr-examples");
  for (const s of m.meta.examples) {
    const b = document.createElement("button");
    b.type = "button"; b.className = "tr-example"; b.textContent = s;
    b.addEventListener("click", () => { input.value = s; translate(); });
    examples.appendChild(b);
  }
  $("tr-size").textContent = m.meta.summary_line;
  status.textContent = `Model loaded in ${m.loadMs.toFixed(0)} ms. Type a German caption and press Translate.`;
  let last = null, count = 0;
  const redraw = () => {
    if (!last) return;
    const rows = attentionMatrix(m, last.attn, last.srcPieces.length, mapChoice.value);
    drawAttention(map, rows, last.srcPieces, last.outPieces,
      `Where each output token looked in the source (${mapChoice.options[mapChoice.selectedIndex].text})`, m.meta.colors);
  };
  mapChoice.addEventListener("change", redraw);

  async function translate() {
    const checked = checkInput(m, input.value);
    output.textContent = "";
    if (checked.error) {
      status.textContent = checked.error;
      root.dataset.state = "refused";
      output.dataset.ids = "";
      output.dataset.seq = String(++count);
      return;
    }
    go.disabled = true;
    root.dataset.state = "running";
    status.textContent = "Translating…";
    await new Promise((r) => setTimeout(r, 0));                      // let the page show it
    try {
      const srcIds = checked.ids;
      const maxLen = Math.min(config.max_len, srcIds.length + m.meta.decoding.extra_len);
      const t0 = performance.now();
      const res = method.value === "beam" ? await beam(m, srcIds, maxLen, m.meta.decoding.beam_size, m.meta.decoding.length_penalty)
        : await greedy(m, srcIds, maxLen);
      const ms = performance.now() - t0;
      const ids = res.ids.slice(1);                                    // without <bos>
      const body = ids[ids.length - 1] === m.meta.special.eos_id ? ids.slice(0, -1) : ids;
      output.textContent = body.length ? m.tokenizer.decode(body, { skip_special_tokens: false, clean_up_tokenization_spaces: false }) : "";
      output.dataset.ids = JSON.stringify(res.ids);
      output.dataset.read = checked.text;                             // the input as the model read it
      output.dataset.ms = ms.toFixed(2);
      const name = method.value === "beam" ? `beam search (${m.meta.decoding.beam_size} beams)` : "greedy decoding";
      const read = checked.text !== input.value ? ` Read as: “${checked.text}” (spaces and typography as in the training captions).` : "";
      status.textContent = `${name}: ${ids.length} tokens in ${ms.toFixed(0)} ms (${(ms / ids.length).toFixed(1)} ms per token), in your browser.${read}`;
      last = { attn: res.attn, srcPieces: srcIds.map((i) => m.pieces[i]), outPieces: ids.map((i) => m.pieces[i]) };
      redraw();
      root.dataset.state = "done";
    } catch (e) {
      status.textContent = `Translation failed: ${e.message}`;
      root.dataset.state = "error";
    } finally {
      go.disabled = false;
      output.dataset.seq = String(++count);
    }
  }
  go.addEventListener("click", translate);
  input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); translate(); } });
  go.disabled = false;
  root.dataset.state = "ready";
}

main();
