// The book's trained Transformer, translating in the reader's browser (chapter 12b): an explorer.
//
// Two ONNX graphs exported by transformer_lib.export share one file of weights (weights.bin,
// ONNX external data): encoder.onnx (source ids -> memory, and every encoder attention score and
// weight) and decoder.onnx (a prefix and the memory -> the next token's logits, and the self- and
// cross-attention of the prefix's last position). onnxruntime-web runs them in WebAssembly;
// @huggingface/tokenizers reads the same tokenizer.json as the Python SubwordTokenizer. Both
// libraries come from the npm registry at build time (`make vendor`) and are served by the book:
// nothing loads from the internet. The model files are kept in the browser's Cache Storage, so a
// second visit downloads none of them.
//
// Greedy decoding and beam search follow transformer_lib.decoding step for step (the browser test
// checks them token for token against Python); sampling follows the rules written next to it.
// The page holds only #translator and its #tr-status line: this file builds every control.
import * as ort from "../../translator-vendor/ort/ort.wasm.bundle.min.mjs";
import { Tokenizer } from "../../translator-vendor/tokenizers/tokenizers.min.mjs";

const MODEL_DIR = new URL("model/", import.meta.url);
ort.env.wasm.wasmPaths = new URL("../../translator-vendor/ort/", import.meta.url).href;
ort.env.wasm.numThreads = 1;          // a static page is not cross-origin isolated: no threads

const CACHE_PREFIX = "transformer-book-model-";
const REDECODE_DELAY_MS = 120;        // a control change waits this long for the next one
const SUPERSEDED = Symbol("superseded");

// ---- small helpers -------------------------------------------------------------------------------
const $ = (id) => document.getElementById(id);

// Resolves in a new task of the event loop (a message, not setTimeout's clamped 4 ms): the page
// handles clicks and key presses between two decoder steps.
const channel = new MessageChannel();
const nextTask = () => new Promise((resolve) => { channel.port1.onmessage = resolve; channel.port2.postMessage(null); });

function h(tag, attrs = {}, ...children) {                          // an HTML element
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  e.append(...children.filter((c) => c !== null && c !== undefined));
  return e;
}

const SVG = "http://www.w3.org/2000/svg";
function s(name, attrs = {}, text) {                                // an SVG element
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// `color` mixed with white: t of the colour, 1 - t of white (book/booktools/diagrams.py's light()).
function light(color, t) {
  const mix = [1, 3, 5].map((i) => Math.round(255 - t * (255 - parseInt(color.slice(i, i + 2), 16))));
  return "#" + mix.map((c) => c.toString(16).padStart(2, "0").toUpperCase()).join("");
}

const mb = (bytes) => (bytes / 1e6).toFixed(1);
const pct = (p) => `${(100 * p).toFixed(1)}%`;

// ---- the page's words, in the edition's language ------------------------------------------------------
// The Chinese edition (the book built with language zh_CN, <html lang="zh-CN">) gets its interface
// in Chinese; numbers, tokens and the model's output are the same in both.
const LANG = (document.documentElement.lang || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
const TEXTS = {
  en: {
    quotedNote: "Quotation marks: few training captions have them, mostly around names and the text of signs; " +
      "expect the quoted words, and a sentence that starts with a quote, to come out garbled.",
    empty: "Type a German sentence first.",
    unknownChars: (list, n) => `The model has never seen ${n === 1 ? "this character" : "these characters"}: ` +
      `${list}. Its vocabulary holds only the characters of the Multi30k ` +
      `training captions; remove ${n === 1 ? "it" : "them"} and try again.`,
    unk: "Part of this text maps to the unknown token <unk>; rephrase it.",
    tooLong: (n, limit, trained) => `This text is ${n} tokens long (with <eos>); the model reads at most ${limit} ` +
      `(its max_len: the positional encoding has no more positions). It was trained on captions of at most ` +
      `${trained} tokens: try one sentence.`,
    chosenTitle: "the token the decoder chose",
    barsMass: (p) => `these 10 tokens hold ${p} of the probability`,
    barsMark: "◀ marks the token the decoder chose",
    barsChosenOut: (piece, p) => `the chosen token “${piece}” (p = ${p}) is not among them`,
    barsGreyed: "greyed: removed by top-k / top-p before the draw",
    joinNotes: (notes) => notes.join("; ") + ".",
    barsHead: (prefix, T, zero) => `After “${prefix}”, the ten most likely next tokens at temperature ${T}` +
      (zero ? " (T = 0 picks the top token; the bars show T = 1)" : "") + ":",
    treeTitle: (steps, rows) => `Beam search tree: ${steps} steps, ${rows} candidates each`,
    step: (t) => `step ${t}`,
    score: (x) => `score ${x}`,
    status: { kept: "kept", pruned: "pruned", finished: "finished" },
    legend: ["kept", "pruned, or left when the search stopped", "finished: score = log P / ((5 + |Y|) / 6)^α",
      "the returned output"],
    axes: { srcQuery: "source token (query)", srcKey: "source token (key)", outQuery: "output token (query)",
      outStep: "output token (query: the step that wrote it)", prefixKey: "prefix token (key)" },
    masked: "masked (a later position)",
    queryNote: (piece, pos, layer, head, dk, root) => `The query of “${piece}” (position ${pos}) in encoder layer ${layer}, head ${head}, ` +
      `against every key. Divided by √d_k = √${dk} = ${root}; the encoder masks nothing ` +
      "(every key is visible); the softmax turns the row into weights that sum to 1.",
    queryHeads: ["key", "q · k", "÷ √d_k", "mask", "softmax weight"],
    visible: "visible",
    queryAgree: (x) => `These weights, computed here from the raw scores, differ from the model's own by at most ${x}.`,
    translate: "Translate",
    methods: [["greedy", "greedy"], ["beam", "beam search"], ["sample", "sampling"]],
    kinds: [["cross", "cross-attention"], ["enc", "encoder self-attention"], ["dec", "decoder self-attention (masked)"]],
    meanHeads: (n) => `mean of the ${n} heads`,
    head: (i) => `head ${i}`,
    layer: (i) => `layer ${i}`,
    beamSize: "Beam size K",
    beamSizeHelp: (max) => `How many partial translations survive each step (1 to ${max}). ` +
      "Each step scores 2K candidates; a wider beam searches more but runs K rows through the decoder.",
    alpha: "Length penalty α",
    alphaHelp: "Finished translations are ranked by log P / ((5 + length) / 6)^α: " +
      "at 0 the shortest tends to win, larger values favour longer ones.",
    topK: "Top-k", topKHelp: "Draw only from the k most likely tokens (0: no limit).",
    topP: "Top-p", topPHelp: "Draw only from the most likely tokens that together hold a share p of the probability (1: no limit).",
    seed: "Seed", seedHelp: "Starts the random numbers: the same seed gives the same draws, so the same translation.",
    treeLabel: "Beam search tree", treeHead: "The beam search tree", attnRegion: "The attention map drawn (scrolls sideways)",
    treeNote: "Columns are steps; each box is a candidate: its token and total log-probability.",
    stepLabel: "Step by step", stepHead: "Step by step: what the decoder saw", position: "Output position",
    mapsLabel: "Attention maps", mapsHead: "Attention maps",
    mapsNote: "Rows are queries, columns the keys they attend to. Cross-attention: each output " +
      "token over the German pieces; encoder: the German pieces over each other; decoder: each output token over " +
      "the tokens before it (later ones are masked, grey).",
    map: "Map", layerLabel: "Layer", headLabel: "Head",
    queryLabel: "One query's path", queryHead: "One query's path: raw score → ÷ √d_k → mask → softmax",
    encoderLayer: "Encoder layer", queryToken: "Query token",
    sentence: "German sentence", enterHelp: "Enter translates; Shift+Enter starts a new line.",
    examples: "Examples (click one to translate it):", decoding: "Decoding",
    method: "Method", methodHelp: "Greedy takes the most likely token at every step; beam search keeps the K " +
      "best partial translations; sampling draws each token at random.",
    temperature: "Temperature T", temperatureHelp: "The logits are divided by T before the softmax: below 1 sharpens the " +
      "distribution, above 1 flattens it, 0 always takes the top token. Sampling draws from it; for every " +
      "method it sets the bars below.",
    summary: (meta) => meta.summary_line ?? "",
    methodName: (o) => o.method === "beam" ? `beam search (${o.beamSize} beam${o.beamSize === 1 ? "" : "s"}, α = ${o.alpha})`
      : o.method === "greedy" ? "greedy decoding"
        : `sampling (T = ${o.temperature}, top-k ${o.topK || "off"}, top-p ${o.topP < 1 ? o.topP : "off"}, seed ${o.seed})`,
    loading: (got, total) => `Loading the model: ${got} of ${total} MB…`,
    preparing: "Preparing the model…",
    loadFailed: (msg) => `The model could not be loaded: ${msg}`,
    loaded: (ms, cached, total) => `Model loaded in ${ms} ms (${cached ? "from your browser's cache" :
      `${total} MB downloaded, kept in your browser for the next visit`}). Type a German caption and press Translate.`,
    failed: (msg) => `Translation failed: ${msg}`,
    translating: "Translating…",
    readAs: (text) => ` Read as: “${text}” (spaces and typography as in the training captions).`,
    done: (name, n, ms, per) => `${name}: ${n} tokens in ${ms} ms (${per} ms per token), in your browser.`,
    positionText: (t, n, piece) => `${t} of ${n}: “${piece}”`,
    mapNames: { enc: "Encoder self-attention", dec: "Decoder masked self-attention", cross: "Cross-attention" },
    mapTitle: (name, layer, headText) => `${name}, layer ${layer}, ${headText}`,
  },
  zh: {
    quotedNote: "引号：训练用的图片描述里带引号的很少，多用来括住人名和招牌上的文字；" +
      "被引号括住的词，以及以引号开头的句子，译出来多半是乱的。",
    empty: "请先输入一个德语句子。",
    unknownChars: (list, n) => `模型从未见过${n === 1 ? "这个字符" : "这些字符"}：${list}。它的词表只包含 ` +
      `Multi30k 训练描述中出现过的字符；请删去${n === 1 ? "它" : "它们"}再试。`,
    unk: "这段文字的一部分会被映射为未知词元 <unk>；请换个说法。",
    tooLong: (n, limit, trained) => `这段文字长 ${n} 个词元（含 <eos>）；模型最多读 ${limit} 个` +
      `（即它的 max_len：位置编码没有更多位置）。它训练时用的描述最多 ${trained} 个词元：请只输入一个句子。`,
    chosenTitle: "解码器选中的词元",
    barsMass: (p) => `这 10 个词元共占 ${p} 的概率`,
    barsMark: "◀ 标出解码器选中的词元",
    barsChosenOut: (piece, p) => `选中的词元“${piece}”（p = ${p}）不在其中`,
    barsGreyed: "灰色：抽样之前已被 top-k / top-p 去掉",
    joinNotes: (notes) => notes.join("；") + "。",
    barsHead: (prefix, T, zero) => `在“${prefix}”之后，温度为 ${T} 时最可能的十个下一个词元` +
      (zero ? "（T = 0 总是取最可能的词元；条形图按 T = 1 显示）" : "") + "：",
    treeTitle: (steps, rows) => `束搜索树：${steps} 步，每步 ${rows} 个候选`,
    step: (t) => `第 ${t} 步`,
    score: (x) => `得分 ${x}`,
    status: { kept: "保留", pruned: "剪除", finished: "完成" },
    legend: ["保留", "剪除，或搜索停止时仍未完成", "完成：得分 = log P / ((5 + |Y|) / 6)^α", "返回的输出"],
    axes: { srcQuery: "源语言词元（查询）", srcKey: "源语言词元（键）", outQuery: "输出词元（查询）",
      outStep: "输出词元（查询：写出它的那一步）", prefixKey: "前缀词元（键）" },
    masked: "已掩码（更靠后的位置）",
    queryNote: (piece, pos, layer, head, dk, root) => `编码器第 ${layer} 层、第 ${head} 个头中，“${piece}”（位置 ${pos}）的查询` +
      `与每一个键的比较。除以 √d_k = √${dk} = ${root}；编码器不做任何掩码（每个键都可见）；` +
      "softmax 把这一行变成和为 1 的权重。",
    queryHeads: ["键", "q · k", "÷ √d_k", "掩码", "softmax 权重"],
    visible: "可见",
    queryAgree: (x) => `这些由原始分数在此算出的权重，与模型自己的权重最多相差 ${x}。`,
    translate: "翻译",
    methods: [["greedy", "贪心解码"], ["beam", "束搜索"], ["sample", "采样"]],
    kinds: [["cross", "交叉注意力"], ["enc", "编码器自注意力"], ["dec", "解码器自注意力（带掩码）"]],
    meanHeads: (n) => `${n} 个头的平均`,
    head: (i) => `第 ${i} 个头`,
    layer: (i) => `第 ${i} 层`,
    beamSize: "束宽 K",
    beamSizeHelp: (max) => `每一步保留多少个部分译文（1 到 ${max}）。` +
      "每一步给 2K 个候选打分；束越宽搜索得越多，但每步要让 K 行通过解码器。",
    alpha: "长度惩罚 α",
    alphaHelp: "完成的译文按 log P / ((5 + 长度) / 6)^α 排序：α 为 0 时最短的往往胜出，α 越大越偏向较长的译文。",
    topK: "Top-k", topKHelp: "只从最可能的 k 个词元中抽取（0：不限）。",
    topP: "Top-p", topPHelp: "只从合计占概率 p 的那些最可能的词元中抽取（1：不限）。",
    seed: "随机种子", seedHelp: "随机数的起点：同一个种子抽出同样的结果，因而得到同样的译文。",
    treeLabel: "束搜索树", treeHead: "束搜索树", attnRegion: "所画的注意力图（可横向滚动）",
    treeNote: "每一列是一步；每个方框是一个候选：它的词元和累计对数概率。",
    stepLabel: "逐步查看", stepHead: "逐步查看：解码器看到了什么", position: "输出位置",
    mapsLabel: "注意力图", mapsHead: "注意力图",
    mapsNote: "行是查询，列是它们关注的键。交叉注意力：每个输出词元对德语子词的注意力；编码器：德语子词之间的注意力；" +
      "解码器：每个输出词元对它之前各词元的注意力（之后的位置被掩码，显示为灰色）。",
    map: "注意力图", layerLabel: "层", headLabel: "头",
    queryLabel: "一个查询的路径", queryHead: "一个查询的路径：原始分数 → ÷ √d_k → 掩码 → softmax",
    encoderLayer: "编码器层", queryToken: "查询词元",
    sentence: "德语句子", enterHelp: "按 Enter 翻译；按 Shift+Enter 换行。",
    examples: "示例（点击一个即可翻译）：", decoding: "解码",
    method: "方法", methodHelp: "贪心解码每一步取最可能的词元；束搜索保留 K 个最好的部分译文；采样则随机抽取每个词元。",
    temperature: "温度 T", temperatureHelp: "logits 在 softmax 之前除以 T：小于 1 使分布更尖锐，大于 1 使它更平坦，" +
      "0 总是取最可能的词元。采样从这个分布中抽取；对每种方法，它都决定下面的条形图。",
    summary: (meta) => {
      const c = meta.config, b = meta.bleu;
      return `模型：${(meta.parameters / 1e4).toFixed(0)} 万个参数（d_model ${c.d_model}，${c.n_encoder_layers}+${c.n_decoder_layers} 层，` +
        `${c.n_heads} 个头），本书的 ${meta.run.preset} 运行；16 位权重的文件共 ${mb(meta.total_bytes)} MB；` +
        `Multi30k 测试集上的 BLEU：贪心解码 ${b.greedy.onnx_fp16.toFixed(2)}，四束束搜索 ${b.beam.onnx_fp16.toFixed(2)}。` +
        "训练数据 Multi30k 仅供非商业的研究和教育使用。";
    },
    methodName: (o) => o.method === "beam" ? `束搜索（${o.beamSize} 束，α = ${o.alpha}）`
      : o.method === "greedy" ? "贪心解码"
        : `采样（T = ${o.temperature}，top-k ${o.topK || "关"}，top-p ${o.topP < 1 ? o.topP : "关"}，种子 ${o.seed}）`,
    loading: (got, total) => `正在加载模型：${got} / ${total} MB…`,
    preparing: "正在准备模型…",
    loadFailed: (msg) => `模型无法加载：${msg}`,
    loaded: (ms, cached, total) => `模型加载用时 ${ms} ms（${cached ? "来自浏览器缓存" :
      `下载了 ${total} MB，已存入浏览器，下次访问无需再下载`}）。输入一句德语图片描述，然后点击“翻译”。`,
    failed: (msg) => `翻译失败：${msg}`,
    translating: "正在翻译…",
    readAs: (text) => ` 按训练描述的空格和标点读作：“${text}”。`,
    done: (name, n, ms, per) => `${name}：${n} 个词元，用时 ${ms} ms（每个词元 ${per} ms），在你的浏览器中运行。`,
    positionText: (t, n, piece) => `第 ${t} / ${n} 个：“${piece}”`,
    mapNames: { enc: "编码器自注意力", dec: "解码器带掩码的自注意力", cross: "交叉注意力" },
    mapTitle: (name, layer, headText) => `${name}，第 ${layer} 层，${headText}`,
  },
};
const TEXT = TEXTS[LANG];

const shorten = (text, n) => (text.length > n ? text.slice(0, n - 1) + "…" : text);

// ---- loading: checksums, Cache Storage, a byte counter ----------------------------------------------
async function sha256Hex(bytes) {                                   // null where crypto.subtle is missing
  if (!globalThis.crypto?.subtle) return null;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function matches(bytes, sha256) {
  const got = await sha256Hex(bytes);
  return got === null || got === sha256;
}

// The cache of this model (named after its weights' checksum); caches of older models are deleted.
async function openCache(meta) {
  if (!globalThis.caches) return null;
  try {
    const name = CACHE_PREFIX + meta.files.weights.sha256.slice(0, 16);
    for (const old of await caches.keys()) if (old.startsWith(CACHE_PREFIX) && old !== name) await caches.delete(old);
    return await caches.open(name);
  } catch {
    return null;                                                    // storage switched off: just fetch
  }
}

// Fetch `url`, counting the bytes as they arrive; mode "reload" goes past the browser's HTTP cache.
async function download(url, mode, progress) {
  const r = await fetch(url, { cache: mode });
  if (!r.ok) throw new Error(`${url.pathname.split("/").pop()}: HTTP ${r.status}`);
  const parts = [];
  let n = 0;
  const reader = r.body.getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    parts.push(chunk.value);
    n += chunk.value.length;
    progress.add(chunk.value.length);
  }
  const bytes = new Uint8Array(n);
  let offset = 0;
  for (const p of parts) { bytes.set(p, offset); offset += p.length; }
  return bytes;
}

// One model file (an entry of model.json's `files`): from the cache if it is there with the right
// checksum, else from the network (verified, then stored in the cache).
async function loadFile(file, cache, progress) {
  const url = new URL(file.name, MODEL_DIR), key = `${url.href}?sha256=${file.sha256}`;
  const hit = cache && (await cache.match(key).catch(() => undefined));
  if (hit) {
    const bytes = new Uint8Array(await hit.arrayBuffer());
    if (await matches(bytes, file.sha256)) { progress.add(bytes.length); return { bytes, cached: true }; }
  }
  for (const mode of ["default", "reload"]) {
    const bytes = await download(url, mode, progress);
    if (await matches(bytes, file.sha256)) {
      if (cache) await cache.put(key, new Response(bytes)).catch(() => {});
      return { bytes, cached: false };
    }
    progress.add(-bytes.length);                                    // a stale copy: count it out, retry
  }
  throw new Error(`${file.name} does not match its checksum in model.json; reload the page`);
}

async function load(meta, progress) {
  const t0 = performance.now();
  const cache = await openCache(meta);
  const names = ["encoder", "decoder", "weights", "tokenizer"];
  const files = await Promise.all(names.map((n) => loadFile(meta.files[n], cache, progress)));
  const [encBytes, decBytes, weights, tokBytes] = files.map((f) => f.bytes);
  progress.preparing();
  const options = { executionProviders: ["wasm"], externalData: [{ path: meta.files.weights.name, data: weights }] };
  const encoder = await ort.InferenceSession.create(encBytes, options);
  const decoder = await ort.InferenceSession.create(decBytes, options);
  const tokJson = JSON.parse(new TextDecoder().decode(tokBytes));
  const tokenizer = new Tokenizer(tokJson, {});
  // Every character the vocabulary contains: anything else would become <unk>.
  const known = new Set(), pieces = [];
  for (const [piece, id] of Object.entries(tokJson.model.vocab)) {
    pieces[id] = piece;
    if (!/^<.*>$/.test(piece)) for (const ch of piece) known.add(ch);
  }
  const source = files.every((f) => f.cached) ? "cache" : "network";
  return { meta, encoder, decoder, tokenizer, known, pieces, source, loadMs: performance.now() - t0 };
}

// ---- checks on the input -------------------------------------------------------------------------
// What a person types or pastes, written the way the Multi30k captions are: Unicode NFC (one code
// point for "ü", never "u" + a combining diaeresis), one plain space between words (newlines,
// tabs, no-break and thin spaces, runs of them), nothing at either end, and the few typographic
// variants the captions never use replaced by the ones they do. A quotation mark the vocabulary
// lacks becomes the nearest one it has (QUOTES). Only what is still unknown after this is refused.
const VARIANTS = [[/[\u2014\u2012\u2015\u2212]/g, "\u2013"],       // em dash, figure dash, minus -> en dash
  [/[\u2010\u2011]/g, "-"],                                        // hyphen, no-break hyphen -> "-"
  [/[\u00bb\u00ab]/g, (q) => (q === "\u00bb" ? "\u201e" : "\u201c")],   // »German« -> „German“
  [/[\u203a\u2039]/g, (q) => (q === "\u203a" ? "\u201a" : "\u2018")],   // ›German‹ -> ‚German‘
  [/[\u2032\u00b4]/g, "'"], [/\u2026/g, "..."]];                    // prime, acute accent; ellipsis
const QUOTES = {                                                    // in order of preference
  "\u201e": ["\""], "\u201c": ["\""], "\u201d": ["\u201c", "\""], "\u201f": ["\u201c", "\""],   // „ “ ” ‟
  "\u201a": ["'"], "\u2018": ["'"], "\u2019": ["'"], "\u201b": ["\u2018", "'"],                // ‚ ‘ ’ ‛
};
// Quotation marks are kept: „…“ is how the German training captions quote (plain "…" is rarer), and
// Python's tokenizer reads them as they are. Few captions quote, almost only names and the text of
// signs: the page says so (chapter 12b counts the captions and shows what the model writes).
const QUOTED = /["„“”]/u;
export { normaliseInput };
function normaliseInput(text, known) {
  let t = text.normalize("NFC").replace(/\s+/gu, " ").trim();
  for (const [pattern, to] of VARIANTS) t = t.replace(pattern, to);
  return [...t].map((ch) => (known.has(ch) ? ch : (QUOTES[ch] || []).find((q) => known.has(q)) ?? ch)).join("");
}

function checkInput(m, raw) {
  const text = normaliseInput(raw, m.known);
  if (!text) return { error: TEXT.empty };
  const unknown = [...new Set([...text].filter((ch) => ch !== " " && !m.known.has(ch)))];
  if (unknown.length) {
    return { error: TEXT.unknownChars(unknown.map((c) => `“${c}”`).join(" "), unknown.length) };
  }
  const ids = m.tokenizer.encode(text, { add_special_tokens: false }).ids;
  if (ids.includes(m.meta.special.unk_id)) return { error: TEXT.unk };
  ids.push(m.meta.special.eos_id);                                 // the source ends with <eos>, as in training
  const limit = m.meta.config.max_len;
  if (ids.length > limit) {
    return { error: TEXT.tooLong(ids.length, limit, m.meta.training.max_sentence_tokens) };
  }
  return { ids, text };
}

// ---- running the two graphs ------------------------------------------------------------------------
// Every session.run is counted on #translator (data-encoder-runs, data-decoder-runs).
async function encode(m, srcIds) {
  const src = new ort.Tensor("int64", BigInt64Array.from(srcIds, BigInt), [1, srcIds.length]);
  const out = await m.encoder.run({ src });
  m.counted("encoderRuns");
  return { srcIds, memory: out.memory, scores: out.enc_scores.data, attention: out.enc_attention.data };
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
  m.counted("decoderRuns");
  return out;                          // logits (N, V), self_attention (L, N, h, T), cross_attention (L, N, h, S)
}

function rowOf(tensor, i) {            // row i of an (L, N, h, X) tensor: Float32Array (L * h * X)
  const [L, N, hh, X] = tensor.dims, w = hh * X;
  const row = new Float32Array(L * w);
  for (let l = 0; l < L; l++) row.set(tensor.data.subarray((l * N + i) * w, (l * N + i + 1) * w), l * w);
  return row;
}

// What the views need of one decoder step, for row i: its logits and its attention rows.
function record(out, i) {
  const V = out.logits.dims[1];
  return { logits: out.logits.data.slice(i * V, (i + 1) * V), self: rowOf(out.self_attention, i), cross: rowOf(out.cross_attention, i) };
}

// ---- decoding ------------------------------------------------------------------------------------
function argmax(a, off, n) {           // first index of the largest value, as torch.argmax
  let best = 0, v = a[off];
  for (let j = 1; j < n; j++) if (a[off + j] > v) { v = a[off + j]; best = j; }
  return best;
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

function softmaxT(logits, T) {                                        // softmax(logits / T) in float64
  const n = logits.length, p = new Float64Array(n);
  let mx = -Infinity;
  for (let j = 0; j < n; j++) mx = Math.max(mx, logits[j] / T);
  let sum = 0;
  for (let j = 0; j < n; j++) { p[j] = Math.exp(logits[j] / T - mx); sum += p[j]; }
  for (let j = 0; j < n; j++) p[j] /= sum;
  return p;
}

// Greedy decoding and sampling: one row, one decoder run per output token. `choose` picks the next
// token from the logits; `pause` lets the page handle its events, and throws when a newer request
// has replaced this one.
async function decodeOneRow(m, memory, maxLen, choose, pause) {
  const { bos_id, eos_id } = m.meta.special;
  const ids = [bos_id], steps = [];
  for (let t = 1; t < maxLen; t++) {
    const out = await step(m, [ids], memory);
    await pause();
    const rec = record(out, 0);
    const next = choose(rec.logits);
    ids.push(next);
    steps.push(rec);
    if (next === eos_id) break;
  }
  return { ids, steps };
}

const greedyChoice = (logits) => argmax(logits, 0, logits.length);

// Sampling, in the order of transformer_lib's `sample_logits` (chapter 10): p = softmax(logits / T);
// top-k keeps the k largest p (ties at the k-th value kept, as `top_k_filter`); the kept tokens are
// renormalised; top-p then keeps, in descending order, the tokens whose strictly more likely kept
// tokens hold less than p of that renormalised mass (so at least one; `top_p_filter` on the top-k
// logits); the kept tokens are renormalised again. One draw u of mulberry32(seed) per step picks by
// the inverse CDF over the kept tokens in descending order (ties by token id). T = 0 and top-k = 1
// mean argmax: exactly greedy. `samplingDistribution` is that final distribution (the browser test
// compares it with `sample_logits`'s).
function mulberry32(seed) {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const isArgmax = (o) => o.temperature === 0 || o.topK === 1;

function keptTokens(p, topK, topP) {                                  // token ids, most likely first
  const order = Array.from(p.keys()).sort((a, b) => p[b] - p[a] || a - b);
  let n = order.length;
  if (topK > 0 && topK < n) {
    const kth = p[order[topK - 1]];
    for (n = topK; n < order.length && p[order[n]] === kth; n++);
  }
  if (topP < 1) {
    let total = 0;                                                   // top-k's mass: renormalise by it
    for (let i = 0; i < n; i++) total += p[order[i]];
    let cum = 0, better = 0, i = 0;
    for (; i < n; i++) {
      if (i > 0 && p[order[i]] !== p[order[i - 1]]) better = cum;  // mass of the strictly better tokens
      if (better >= topP) break;
      cum += p[order[i]] / total;
    }
    n = i;
  }
  return order.slice(0, n);
}

// The distribution sampling draws from: p restricted to the kept tokens and renormalised (zero elsewhere).
export function samplingDistribution(logits, temperature, topK = 0, topP = 1) {
  const p = softmaxT(logits, temperature), kept = keptTokens(p, topK, topP), q = new Float64Array(p.length);
  let total = 0;
  for (const i of kept) total += p[i];
  for (const i of kept) q[i] = p[i] / total;
  return q;
}

function sampler(o) {
  if (isArgmax(o)) return greedyChoice;
  const rng = mulberry32(o.seed);
  return (logits) => {
    const p = softmaxT(logits, o.temperature), kept = keptTokens(p, o.topK, o.topP), u = rng();
    let total = 0, cdf = 0;
    for (const i of kept) total += p[i];
    for (const i of kept) { cdf += p[i] / total; if (u < cdf) return i; }
    return kept[kept.length - 1];
  };
}

const lengthPenalty = (len, alpha) => ((5 + len) / 6) ** alpha;        // Wu et al. (2016)

// The 2K best (score, beam, token) of a step: score = the beam's score + the token's log-probability.
function bestCandidates(logits, scores, K) {
  const V = logits.dims[1], cand = [];
  for (let k = 0; k < K; k++) {
    if (scores[k] === -Infinity) continue;
    const lp = logSoftmax(logits.data, k * V, V);
    for (let v = 0; v < V; v++) {
      const sc = Math.fround(scores[k] + lp[v]);
      if (cand.length < 2 * K || sc > cand[cand.length - 1][0]) {
        let i = cand.length;
        while (i > 0 && cand[i - 1][0] < sc) i--;
        cand.splice(i, 0, [sc, k, v]);
        if (cand.length > 2 * K) cand.pop();
      }
    }
  }
  return cand;
}

async function beam(m, memory1, maxLen, K, alpha, pause) {
  // transformer_lib.decoding.beam_search for one sentence: K hypotheses, 2K candidates per step,
  // finished hypotheses scored log P / lp(|Y|), early stop when no live one can win. Also kept:
  // the step records of every hypothesis's path, and the tree (every step's 2K candidates).
  const { bos_id, eos_id, pad_id } = m.meta.special;
  const memory = tile(memory1, K);
  let tokens = Array.from({ length: K }, () => [bos_id]);
  let paths = Array.from({ length: K }, () => []);
  let scores = Float32Array.from({ length: K }, (_, k) => (k === 0 ? 0 : -Infinity));
  const finished = [], tree = [];
  let done = false;
  const longest = maxLen - 1;
  for (let t = 1; t < maxLen; t++) {
    const out = await step(m, tokens, memory);
    await pause();
    const cand = bestCandidates(out.logits, scores, K);
    const records = new Map(), rec = (b) => records.get(b) ?? records.set(b, record(out, b)).get(b);
    const lpT = lengthPenalty(t, alpha);
    const newScores = new Float32Array(K).fill(-Infinity), newBeam = new Array(K).fill(0), newTok = new Array(K).fill(pad_id);
    const column = [];
    let j = 0;
    cand.forEach(([sc, b, tok], r) => {
      const node = { token: tok, parent: b, logp: sc, status: "pruned", prefix: [...tokens[b].slice(1), tok] };
      column.push(node);
      if (tok === eos_id) {
        if (r < K) {
          node.status = "finished";
          node.score = sc / lpT;
          finished.push({ score: node.score, ids: [...tokens[b], eos_id], steps: [...paths[b], rec(b)] });
        }
      } else if (j < K) {
        node.status = "kept";
        newScores[j] = sc; newBeam[j] = b; newTok[j] = tok; j++;
      }
    });
    tree.push(column);
    if (finished.length) {
      const bestDone = Math.max(...finished.map((f) => f.score));
      const alive = Math.max(...newScores);
      const bound = alive / Math.max(lengthPenalty(t + 1, alpha), lengthPenalty(longest, alpha));
      if (alive === -Infinity || bestDone >= bound) done = true;
    }
    paths = newBeam.map((b) => [...paths[b], rec(b)]);
    tokens = newBeam.map((b, k) => [...tokens[b], newTok[k]]);
    scores = newScores;
    if (done) break;
  }
  if (done) {                          // live hypotheses the search stopped with: "left", as in chapter 10
    for (const node of tree[tree.length - 1]) if (node.status === "kept") node.status = "pruned";
  } else {                             // max_len reached: the live hypotheses compete too
    const lGen = tokens[0].length - 1;
    for (let k = 0; k < K; k++) {
      if (scores[k] > -Infinity) finished.push({ score: scores[k] / lengthPenalty(lGen, alpha), ids: tokens[k], steps: paths[k] });
    }
  }
  let best = finished[0];
  for (const f of finished) if (f.score > best.score) best = f;
  return { ids: best.ids, steps: best.steps, tree };
}

// ---- views: the next-token bars --------------------------------------------------------------------
function drawBars(ui, m, res, o, t) {
  const rec = res.steps[t - 1], chosen = res.ids[t];
  const T = o.temperature > 0 ? o.temperature : 1;
  const p = softmaxT(rec.logits, T);
  const top = Array.from(p.keys()).sort((a, b) => p[b] - p[a] || a - b).slice(0, 10);
  // Tokens sampling could not have drawn: removed by top-k / top-p (or all but the top one for argmax).
  const kept = res.method !== "sample" ? null
    : new Set(isArgmax(o) ? [greedyChoice(rec.logits)] : keptTokens(p, o.topK, o.topP));
  const mass = top.reduce((acc, id) => acc + p[id], 0);
  const prefix = res.ids.slice(0, t).map((id) => m.pieces[id]).join(" ");
  const bars = top.map((id) => {
    const excluded = kept && !kept.has(id);
    return h("div", { class: "tr-bar" + (excluded ? " tr-bar-excluded" : ""), "data-token": id, "data-piece": m.pieces[id],
      "data-p": String(p[id]), "data-chosen": id === chosen ? "1" : null, title: `${m.pieces[id]} (id ${id}): p = ${p[id]}` },
    h("span", { class: "tr-bar-piece" }, m.pieces[id]),
    h("span", { class: "tr-bar-track" }, h("span", { class: "tr-bar-fill", style: `width:${(100 * p[id]).toFixed(2)}%` })),
    h("span", { class: "tr-bar-p" }, pct(p[id])),
    h("span", { class: "tr-bar-mark", title: id === chosen ? TEXT.chosenTitle : null }, id === chosen ? "◀" : ""));
  });
  const notes = [TEXT.barsMass(pct(mass)), TEXT.barsMark];
  if (!top.includes(chosen)) notes.push(TEXT.barsChosenOut(m.pieces[chosen], pct(p[chosen])));
  if (kept) notes.push(TEXT.barsGreyed);
  ui.bars.dataset.mass = String(mass);
  ui.bars.replaceChildren(
    h("p", { class: "tr-note" }, TEXT.barsHead(prefix, T, o.temperature === 0)),
    ...bars, h("p", { class: "tr-note" }, TEXT.joinNotes(notes)));
}

// The output tokens, the one at the chosen position marked, its future faded.
function drawTokens(ui, m, res, t) {
  ui.tokens.replaceChildren(...res.ids.map((id, i) =>
    h("span", { class: "tr-token" + (i === t ? " tr-token-now" : i > t ? " tr-token-later" : "") }, m.pieces[id])));
}

// ---- views: the beam tree (chapter 10's style) ---------------------------------------------------------
function drawBeamTree(container, m, res, palette) {
  const dec = palette.decoder, ink = palette.ink, muted = palette.muted;
  const colw = 146, rowh = 46, boxw = 116, rows = Math.max(...res.tree.map((c) => c.length));
  const best = res.ids.slice(1);
  const W = 70 + (res.tree.length + 1) * colw, H = 60 + rows * rowh + 10, yMid = 50 + (rows * rowh) / 2;
  const svg = s("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", class: "tr-tree" });
  svg.appendChild(s("title", {}, TEXT.treeTitle(res.tree.length, rows)));
  svg.appendChild(s("rect", { x: 14, y: yMid - 14, width: 64, height: 28, rx: 5, fill: light(dec, 0.16), stroke: dec, "stroke-width": 1.6 }));
  svg.appendChild(s("text", { x: 46, y: yMid + 4, "text-anchor": "middle", class: "tr-tree-tok" }, "<bos>"));
  let prevPos = [[78, yMid]];
  res.tree.forEach((column, t) => {
    const x = 40 + (t + 1) * colw, keptPos = [];
    svg.appendChild(s("text", { x: x + boxw / 2, y: 30, "text-anchor": "middle", class: "tr-tree-step" }, TEXT.step(t + 1)));
    column.forEach((node, r) => {
      const y = 50 + r * rowh, pruned = node.status === "pruned";
      const onBest = !pruned && node.prefix.every((tok, i) => best[i] === tok);
      const [px, py] = prevPos[node.parent] ?? prevPos[0];
      const g = s("g", { class: "tr-beam-node", "data-step": t + 1, "data-token": node.token, "data-status": node.status,
        "data-logp": String(node.logp), "data-parent": node.parent });
      g.appendChild(s("title", {}, `${node.prefix.map((id) => m.pieces[id]).join(" ")}: log P = ${node.logp.toFixed(3)}` +
        (node.score !== undefined ? `, ${TEXT.score(node.score.toFixed(3))}` : "") + ` (${TEXT.status[node.status]})`));
      g.appendChild(s("polyline", { points: `${px},${py} ${x - 2},${y + 13}`, fill: "none",
        stroke: onBest ? ink : pruned ? "#D4D4D4" : muted, "stroke-width": onBest ? 2.2 : 1, "stroke-dasharray": pruned ? "5 3" : "none" }));
      g.appendChild(s("rect", { x, y, width: boxw, height: 26, rx: 5, "stroke-width": 1.2, stroke: pruned ? "#BBBBBB" : dec,
        fill: onBest ? light(dec, 0.45) : pruned ? "#F7F7F7" : light(dec, 0.12), "stroke-dasharray": pruned ? "5 3" : "none" }));
      if (node.status === "finished") {
        g.appendChild(s("rect", { x: x - 3, y: y - 3, width: boxw + 6, height: 32, rx: 6, fill: "none", stroke: dec, "stroke-width": 1 }));
        g.appendChild(s("text", { x: x + boxw / 2, y: y + 41, "text-anchor": "middle", class: "tr-tree-score", fill: dec }, TEXT.score(node.score.toFixed(2))));
      }
      g.appendChild(s("text", { x: x + boxw / 2, y: y + 17, "text-anchor": "middle", class: "tr-tree-tok", fill: pruned ? "#9A9A9A" : ink,
        "font-weight": onBest ? "bold" : "normal" }, `${shorten(m.pieces[node.token], 9)} (${node.logp.toFixed(2)})`));
      svg.appendChild(g);
      if (node.status === "kept") keptPos.push([x + boxw, y + 13]);
    });
    prevPos = keptPos.length ? keptPos : prevPos;
  });
  container.replaceChildren(svg);
}

// The legend of the tree, as in chapter 10 (HTML, so that it wraps on a narrow screen).
function beamLegend(palette) {
  const dec = palette.decoder;
  const item = (fill, stroke, dash, double, label) => h("span", { class: "tr-legend-item" },
    h("span", { class: "tr-swatch" + (double ? " tr-swatch-double" : ""), style: `background:${fill};border:1px ${dash ? "dashed" : "solid"} ${stroke};` +
      (double ? `outline:1px solid ${dec};` : "") }), label);
  return h("div", { class: "tr-legend" },
    item(light(dec, 0.12), dec, false, false, TEXT.legend[0]),
    item("#F7F7F7", "#BBBBBB", true, false, TEXT.legend[1]),
    item("#FFFFFF", dec, false, true, TEXT.legend[2]),
    item(light(dec, 0.45), dec, false, false, TEXT.legend[3]));
}

// ---- views: attention maps -----------------------------------------------------------------------------
const VIRIDIS = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"];
function viridis(x) {                                               // x in [0, 1]
  const p = Math.min(Math.max(x, 0), 1) * (VIRIDIS.length - 1), i = Math.floor(p), f = p - i;
  if (i >= VIRIDIS.length - 1) return VIRIDIS[VIRIDIS.length - 1];
  const c = (hex) => [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16));
  const a = c(VIRIDIS[i]), b = c(VIRIDIS[i + 1]);
  return `rgb(${a.map((v, k) => Math.round(v + f * (b[k] - v))).join(",")})`;
}

// One attention weight of head `head`, or of their mean ("mean"); read(hd) gives head hd's weight.
function headValue(nHeads, head, read) {
  if (head !== "mean") return read(Number(head));
  let sum = 0;
  for (let hd = 0; hd < nHeads; hd++) sum += read(hd);
  return sum / nHeads;
}

// The matrix of a map: rows of weights, null for a masked cell; row and column labels; axis names.
function attentionMatrix(m, res, kind, layer, head) {
  const enc = res.enc;
  const { n_heads: nh } = m.meta.config, l = layer - 1, S = enc.srcIds.length, n = res.ids.length - 1;
  const src = enc.srcIds.map((id) => m.pieces[id]), out = res.ids.slice(1).map((id) => m.pieces[id]);
  if (kind === "enc") {
    const rows = src.map((_, i) => src.map((__, j) => headValue(nh, head, (hd) => enc.attention[((l * nh + hd) * S + i) * S + j])));
    return { rows, rowLabels: src, colLabels: src, rowAxis: TEXT.axes.srcQuery, colAxis: TEXT.axes.srcKey };
  }
  if (kind === "cross") {
    const rows = res.steps.map((r) => src.map((_, j) => headValue(nh, head, (hd) => r.cross[(l * nh + hd) * S + j])));
    return { rows, rowLabels: out, colLabels: src, rowAxis: TEXT.axes.outQuery, colAxis: TEXT.axes.srcKey };
  }
  // dec: the step that wrote output token t attends over the prefix <bos> y1 … y(t-1); later positions are masked.
  const prefix = res.ids.slice(0, n).map((id) => m.pieces[id]);
  const rows = res.steps.map((r, i) => prefix.map((_, j) =>
    j <= i ? headValue(nh, head, (hd) => r.self[(l * nh + hd) * (i + 1) + j]) : null));
  return { rows, rowLabels: out, colLabels: prefix, rowAxis: TEXT.axes.outStep, colAxis: TEXT.axes.prefixKey };
}

function drawAttention(container, map, title, palette) {
  const { rows, rowLabels, colLabels } = map;
  const cell = 24, left = 30 + 7.2 * Math.max(...rowLabels.map((t) => t.length)), top = 34;
  const bottom = 14 + 7.2 * Math.max(...colLabels.map((t) => t.length)) + 26;
  const W = Math.max(left + cell * colLabels.length + 80, 20 + 7.5 * title.length), H = top + cell * rowLabels.length + bottom;
  const svg = s("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", class: "tr-map" });
  svg.appendChild(s("title", {}, title));
  svg.appendChild(s("text", { x: 8, y: 18, class: "tr-map-title" }, title));
  const vmax = Math.max(1e-9, ...rows.flat().filter((w) => w !== null));
  const masked = light(palette.mask, 0.15);
  rows.forEach((row, i) => row.forEach((w, j) => {
    const rect = s("rect", { x: left + j * cell, y: top + i * cell, width: cell, height: cell, "data-row": i, "data-col": j,
      "data-w": w === null ? "0" : String(w), fill: w === null ? masked : viridis(w / vmax), stroke: w === null ? "#FFFFFF" : "none" });
    rect.appendChild(s("title", {}, `${rowLabels[i]} → ${colLabels[j]}: ${w === null ? TEXT.masked : w.toFixed(3)}`));
    svg.appendChild(rect);
  }));
  rowLabels.forEach((t, i) => svg.appendChild(s("text", { x: left - 6, y: top + i * cell + cell / 2 + 4, "text-anchor": "end", class: "tr-tok" }, t)));
  colLabels.forEach((t, j) => {
    const x = left + j * cell + cell / 2 + 4, y = top + rowLabels.length * cell + 8;
    svg.appendChild(s("text", { x, y, transform: `rotate(-90 ${x} ${y})`, "text-anchor": "end", class: "tr-tok" }, t));
  });
  const y0 = top + rowLabels.length * cell + bottom - 8;
  svg.appendChild(s("text", { x: left + (cell * colLabels.length) / 2, y: y0, "text-anchor": "middle", fill: palette.key, class: "tr-axis" }, map.colAxis));
  const yl = top + (cell * rowLabels.length) / 2;
  svg.appendChild(s("text", { x: 14, y: yl, transform: `rotate(-90 14 ${yl})`, "text-anchor": "middle", fill: palette.query, class: "tr-axis" }, map.rowAxis));
  const bx = left + cell * colLabels.length + 16, bh = cell * rowLabels.length;         // colour bar
  for (let k = 0; k < 50; k++) svg.appendChild(s("rect", { x: bx, y: top + bh * (1 - (k + 1) / 50), width: 12, height: bh / 50 + 0.5, fill: viridis((k + 0.5) / 50) }));
  svg.appendChild(s("text", { x: bx + 16, y: top + 10, class: "tr-tok" }, vmax.toFixed(2)));
  svg.appendChild(s("text", { x: bx + 16, y: top + bh, class: "tr-tok" }, "0"));
  container.replaceChildren(svg);
}

// ---- views: one query's path (chapter 1): raw score -> ÷√d_k -> mask -> softmax ---------------------------
function drawQuery(container, m, enc, layer, head, query) {
  const { n_heads: nh, d_k } = m.meta.config, l = layer - 1, S = enc.srcIds.length;
  const base = ((l * nh + head) * S + query) * S;
  const raw = Array.from(enc.scores.subarray(base, base + S));
  const scaled = raw.map((r) => r / Math.sqrt(d_k));
  const mx = Math.max(...scaled), e = scaled.map((x) => Math.exp(x - mx)), sum = e.reduce((a, b) => a + b, 0);
  const w = e.map((x) => x / sum);
  const agree = Math.max(...w.map((x, j) => Math.abs(x - enc.attention[base + j])));
  const wmax = Math.max(...w), src = enc.srcIds.map((id) => m.pieces[id]);
  const cells = (...xs) => xs.map((x) => h("td", {}, x));
  const body = w.map((wj, j) => h("tr", { class: "tr-q-row" + (j === query ? " tr-q-self" : ""), "data-key": j,
    "data-raw": String(raw[j]), "data-scaled": String(scaled[j]), "data-mask": "1", "data-w": String(wj) },
  h("th", { scope: "row" }, src[j]), ...cells(raw[j].toFixed(2), scaled[j].toFixed(3), TEXT.visible),
  h("td", { class: "tr-q-weight" }, h("span", { class: "tr-q-track" }, h("span", { class: "tr-q-fill", style: `width:${(100 * wj / wmax).toFixed(1)}%` })),
    h("span", {}, wj.toFixed(3)))));
  container.replaceChildren(
    h("p", { class: "tr-note" }, TEXT.queryNote(src[query], query + 1, layer, head + 1, d_k, Math.sqrt(d_k).toFixed(2))),
    h("div", { class: "tr-scroll" }, h("table", { class: "tr-q-table" },
      h("thead", {}, h("tr", {}, ...TEXT.queryHeads.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...body))),
    h("p", { class: "tr-note" }, TEXT.queryAgree(agree.toExponential(1))));
}

// ---- the page: controls ------------------------------------------------------------------------------
// A labelled control with a short help text under it.
function field(control, label, help) {
  const kids = [h("label", { for: control.id }, label), control];
  if (help) {
    control.setAttribute("aria-describedby", control.id + "-help");
    kids.push(h("p", { class: "tr-help", id: control.id + "-help" }, help));
  }
  return h("div", { class: "tr-field" }, ...kids);
}

const number = (id, min, max, stepSize, value) => h("input", { id, type: "number", min, max, step: stepSize, value, inputmode: "decimal" });
const select = (id, options) => h("select", { id }, ...options.map(([value, text]) => h("option", { value }, text)));

function buildUI(root, meta) {
  const { config: c, decoding: d } = meta;
  const status = $("tr-status");
  const ui = {
    status,
    progress: h("progress", { id: "tr-progress", max: meta.total_bytes, value: 0 }),
    input: h("textarea", { id: "tr-input", rows: 2, spellcheck: "false" }),
    go: h("button", { id: "tr-go", type: "button", disabled: true }, TEXT.translate),
    examples: h("div", { id: "tr-examples" }),
    method: select("tr-method", TEXT.methods),
    beamSize: number("tr-beam-size", 1, d.max_beam_size ?? 8, 1, d.beam_size),
    alpha: number("tr-alpha", 0, 2, 0.1, d.length_penalty),
    temperature: number("tr-temperature", 0, 2, 0.05, 1),
    topK: number("tr-top-k", 0, c.tgt_vocab_size, 1, 0),
    topP: number("tr-top-p", 0.05, 1, 0.05, 1),
    seed: number("tr-seed", -2147483648, 2147483647, 1, 1),
    output: h("p", { id: "tr-output", "aria-live": "polite" }),
    position: h("input", { id: "tr-position", type: "range", min: 1, max: 1, step: 1, value: 1 }),
    positionText: h("output", { for: "tr-position", class: "tr-position-text" }),
    tokens: h("p", { class: "tr-tokens" }),
    bars: h("div", { id: "tr-bars" }),
    // a scroll box a keyboard reaches (Tab, then the arrow keys scroll it): the drawings are wider than a phone
    tree: h("div", { id: "tr-beam-tree", class: "tr-scroll", tabindex: 0, role: "region", "aria-label": TEXT.treeLabel }),
    attnKind: select("tr-attn-kind", TEXT.kinds),
    attnLayer: select("tr-attn-layer", []),
    attnHead: select("tr-attn-head", [["mean", TEXT.meanHeads(c.n_heads)],
      ...Array.from({ length: c.n_heads }, (_, hd) => [hd, TEXT.head(hd + 1)])]),
    attention: h("div", { id: "tr-attention", class: "tr-scroll", tabindex: 0, role: "region", "aria-label": TEXT.attnRegion }),
    qLayer: select("tr-q-layer", Array.from({ length: c.n_encoder_layers }, (_, l) => [l + 1, TEXT.layer(l + 1)])),
    qHead: select("tr-q-head", Array.from({ length: c.n_heads }, (_, hd) => [hd, TEXT.head(hd + 1)])),
    qToken: select("tr-q-token", []),
    query: h("div", { id: "tr-query" }),
  };
  ui.input.value = meta.examples[0] ?? "";
  for (const text of meta.examples) ui.examples.appendChild(h("button", { type: "button", class: "tr-example" }, text));

  ui.beamGroup = h("div", { class: "tr-group", hidden: true },
    field(ui.beamSize, TEXT.beamSize, TEXT.beamSizeHelp(d.max_beam_size ?? 8)),
    field(ui.alpha, TEXT.alpha, TEXT.alphaHelp));
  ui.sampleGroup = h("div", { class: "tr-group", hidden: true },
    field(ui.topK, TEXT.topK, TEXT.topKHelp),
    field(ui.topP, TEXT.topP, TEXT.topPHelp),
    field(ui.seed, TEXT.seed, TEXT.seedHelp));
  ui.treeSection = h("section", { class: "tr-section", "aria-label": TEXT.treeLabel },
    h("h4", { class: "tr-h" }, TEXT.treeHead),
    h("p", { class: "tr-note" }, TEXT.treeNote),
    ui.tree, beamLegend(meta.palette));
  ui.results = h("div", { class: "tr-results", hidden: true },
    h("section", { class: "tr-section", "aria-label": TEXT.stepLabel },
      h("h4", { class: "tr-h" }, TEXT.stepHead),
      h("div", { class: "tr-position-row" }, h("label", { for: "tr-position" }, TEXT.position), ui.position, ui.positionText),
      ui.tokens, ui.bars),
    ui.treeSection,
    h("section", { class: "tr-section", "aria-label": TEXT.mapsLabel },
      h("h4", { class: "tr-h" }, TEXT.mapsHead),
      h("p", { class: "tr-note" }, TEXT.mapsNote),
      h("div", { class: "tr-controls" }, field(ui.attnKind, TEXT.map), field(ui.attnLayer, TEXT.layerLabel), field(ui.attnHead, TEXT.headLabel)),
      ui.attention),
    h("section", { class: "tr-section", "aria-label": TEXT.queryLabel },
      h("h4", { class: "tr-h" }, TEXT.queryHead),
      h("div", { class: "tr-controls" }, field(ui.qLayer, TEXT.encoderLayer), field(ui.qHead, TEXT.headLabel), field(ui.qToken, TEXT.queryToken)),
      ui.query));

  root.replaceChildren(
    field(ui.input, TEXT.sentence),
    h("div", { class: "tr-row" }, ui.go, h("span", { class: "tr-help" }, TEXT.enterHelp)),
    h("p", { class: "tr-small" }, TEXT.examples), ui.examples,
    h("fieldset", { class: "tr-settings" }, h("legend", {}, TEXT.decoding),
      h("div", { class: "tr-controls" },
        field(ui.method, TEXT.method, TEXT.methodHelp),
        field(ui.temperature, TEXT.temperature, TEXT.temperatureHelp)),
      ui.beamGroup, ui.sampleGroup),
    status, ui.progress, ui.output, ui.results,
    h("p", { class: "tr-small", id: "tr-size" }, TEXT.summary(meta)));
  return ui;
}

// The decoding settings as the controls hold them, each clamped to its range.
function readNumber(input, fallback, integer) {
  let v = Number(input.value);
  if (input.value.trim() === "" || !Number.isFinite(v)) return fallback;
  if (integer) v = Math.round(v);
  return Math.min(Math.max(v, Number(input.min)), Number(input.max));
}

function settings(ui, meta) {
  return { method: ui.method.value,
    beamSize: readNumber(ui.beamSize, meta.decoding.beam_size, true), alpha: readNumber(ui.alpha, meta.decoding.length_penalty),
    temperature: readNumber(ui.temperature, 1), topK: readNumber(ui.topK, 0, true), topP: readNumber(ui.topP, 1),
    seed: readNumber(ui.seed, 1, true) };
}

// What a decode depends on: equal keys, equal answers (temperature only matters for sampling).
function decodeKey(o) {
  if (o.method === "beam") return `beam ${o.beamSize} ${o.alpha}`;
  if (o.method === "sample") return isArgmax(o) ? "greedy" : `sample ${o.temperature} ${o.topK} ${o.topP} ${o.seed}`;
  return "greedy";
}

const methodName = (o) => TEXT.methodName(o);

// ---- the page: wiring ------------------------------------------------------------------------------
async function main() {
  const root = $("translator");
  if (!root) return;
  root.dataset.encoderRuns = "0";
  root.dataset.decoderRuns = "0";
  let ui, m;
  try {
    const r = await fetch(new URL("model.json", MODEL_DIR), { cache: "no-cache" });
    if (!r.ok) throw new Error(`model.json: HTTP ${r.status}`);
    const meta = await r.json();
    ui = buildUI(root, meta);
    const progress = {
      loaded: 0,
      add(n) {
        this.loaded += n;
        ui.progress.value = this.loaded;
        ui.status.textContent = TEXT.loading(mb(this.loaded), mb(meta.total_bytes));
      },
      preparing() { ui.status.textContent = TEXT.preparing; },
    };
    m = await load(meta, progress);
  } catch (e) {
    $("tr-status").textContent = TEXT.loadFailed(e.message);
    root.dataset.state = "error";
    return;
  }
  m.counted = (name) => { root.dataset[name] = String(Number(root.dataset[name]) + 1); };
  root.dataset.modelSource = m.source;
  ui.progress.hidden = true;
  const palette = m.meta.palette;
  ui.status.textContent = TEXT.loaded(m.loadMs.toFixed(0), m.source === "cache", mb(m.meta.total_bytes));

  let enc = null;       // the encoder's output for the last sentence read: reused by every re-decode
  let res = null;       // the answer shown: ids, per-step records, tree (beam), its sentence and encoder output
  let seq = 0, latest = 0, queue = Promise.resolve(), timer = 0;

  // Requests run one at a time; a newer one makes an older one stop at its next decoder step.
  function schedule(job) {
    const ticket = ++latest;
    const pause = async () => {
      await nextTask();
      if (ticket !== latest) throw SUPERSEDED;
    };
    queue = queue.then(() => (ticket === latest ? job(pause) : undefined)).catch((e) => {
      if (e === SUPERSEDED) return;
      ui.status.textContent = TEXT.failed(e.message);
      root.dataset.state = "error";
      ui.output.dataset.seq = String(++seq);
    });
  }

  // Decode `enc` (the encoder output of `text`) with the controls' settings and show the answer.
  async function decode(pause, text) {
    const o = settings(ui, m.meta);
    root.dataset.state = "running";
    ui.status.textContent = TEXT.translating;
    await pause();                                                   // let the page show it
    const t0 = performance.now();
    if (!enc || enc.text !== text.text) enc = { ...(await encode(m, text.ids)), text: text.text };
    await pause();
    const maxLen = Math.min(m.meta.config.max_len, enc.srcIds.length + m.meta.decoding.extra_len);
    const answer = o.method === "beam" ? await beam(m, enc.memory, maxLen, o.beamSize, o.alpha, pause)
      : await decodeOneRow(m, enc.memory, maxLen, o.method === "sample" ? sampler(o) : greedyChoice, pause);
    const ms = performance.now() - t0;
    const fresh = !res || res.enc !== enc;                           // a new sentence: reset the view choices
    res = { ...answer, enc, text, method: o.method, key: decodeKey(o) };
    showAnswer(o, text, ms, fresh);
  }

  function showAnswer(o, text, ms, fresh) {
    const ids = res.ids.slice(1);                                    // without <bos>
    // the text, as SubwordTokenizer.decode writes it: up to <eos>, without <pad> and <bos>
    const { eos_id, pad_id, bos_id } = m.meta.special;
    const body = ids.slice(0, ids.includes(eos_id) ? ids.indexOf(eos_id) : ids.length).filter((id) => id !== pad_id && id !== bos_id);
    ui.output.textContent = body.length ? m.tokenizer.decode(body, { skip_special_tokens: false, clean_up_tokenization_spaces: false }) : "";
    Object.assign(ui.output.dataset, { ids: JSON.stringify(res.ids), read: text.text, ms: ms.toFixed(2), method: res.method });
    const read = text.text !== text.raw ? TEXT.readAs(text.text) : "";
    const quoted = QUOTED.test(text.text) ? ` ${TEXT.quotedNote}` : "";
    ui.status.textContent = TEXT.done(methodName(o), ids.length, ms.toFixed(0), (ms / ids.length).toFixed(1)) + read + quoted;
    const n = res.steps.length;
    ui.position.max = String(n);
    if (fresh || Number(ui.position.value) > n) ui.position.value = "1";
    if (fresh) ui.qToken.replaceChildren(...res.enc.srcIds.map((id, i) => h("option", { value: i }, `${i + 1}: ${m.pieces[id]}`)));
    ui.results.hidden = false;
    ui.treeSection.hidden = res.method !== "beam";
    if (res.method === "beam") drawBeamTree(ui.tree, m, res, palette);
    else ui.tree.replaceChildren();
    drawStep();
    drawMap();
    drawQueryPath();
    root.dataset.state = "done";
    ui.output.dataset.seq = String(++seq);
  }

  // The views: redrawn from `res` alone, never decoding again.
  function drawStep() {
    const t = Number(ui.position.value);
    ui.positionText.textContent = TEXT.positionText(t, res.steps.length, m.pieces[res.ids[t]]);
    drawTokens(ui, m, res, t);
    drawBars(ui, m, res, settings(ui, m.meta), t);
  }
  function drawMap() {
    const kind = ui.attnKind.value, layers = kind === "enc" ? m.meta.config.n_encoder_layers : m.meta.config.n_decoder_layers;
    if (ui.attnLayer.options.length !== layers) {
      const keep = Math.min(Number(ui.attnLayer.value) || layers, layers);
      ui.attnLayer.replaceChildren(...Array.from({ length: layers }, (_, l) => h("option", { value: l + 1 }, TEXT.layer(l + 1))));
      ui.attnLayer.value = String(keep);
    }
    const layer = Number(ui.attnLayer.value), head = ui.attnHead.value;
    const headText = head === "mean" ? TEXT.meanHeads(m.meta.config.n_heads) : TEXT.head(Number(head) + 1);
    const title = TEXT.mapTitle(TEXT.mapNames[kind], layer, headText);
    drawAttention(ui.attention, attentionMatrix(m, res, kind, layer, head), title, palette);
  }
  function drawQueryPath() {
    drawQuery(ui.query, m, res.enc, Number(ui.qLayer.value), Number(ui.qHead.value), Number(ui.qToken.value));
  }

  // Translate the box's text (reusing the encoder output when it is the sentence read last).
  function translate() {
    clearTimeout(timer);
    const raw = ui.input.value;
    schedule(async (pause) => {
      const checked = checkInput(m, raw);
      if (checked.error) {
        ui.status.textContent = checked.error;
        ui.output.textContent = "";
        ui.output.dataset.ids = "";
        ui.results.hidden = true;
        res = null;
        root.dataset.state = "refused";
        ui.output.dataset.seq = String(++seq);
        return;
      }
      await decode(pause, { ...checked, raw });
    });
  }

  // A decoding control changed: decode the last sentence again if the answer would differ, else redraw.
  function settingsChanged() {
    const o = settings(ui, m.meta);
    ui.beamGroup.hidden = o.method !== "beam";
    ui.sampleGroup.hidden = o.method !== "sample";
    clearTimeout(timer);
    if (!res) return;
    if (decodeKey(o) === res.key) { drawStep(); return; }
    const text = res.text;
    timer = setTimeout(() => schedule((pause) => decode(pause, text)), REDECODE_DELAY_MS);
  }

  ui.go.addEventListener("click", translate);
  ui.input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); translate(); } });
  ui.input.addEventListener("input", () => clearTimeout(timer));     // a new sentence comes: drop a pending re-decode
  ui.examples.addEventListener("click", (e) => {
    const b = e.target.closest(".tr-example");
    if (b) { ui.input.value = b.textContent; translate(); }
  });
  for (const c of [ui.method, ui.beamSize, ui.alpha, ui.temperature, ui.topK, ui.topP, ui.seed]) {
    c.addEventListener("input", settingsChanged);
    c.addEventListener("change", settingsChanged);
  }
  const when = (f) => () => { if (res) f(); };
  ui.position.addEventListener("input", when(drawStep));
  for (const c of [ui.attnKind, ui.attnLayer, ui.attnHead]) c.addEventListener("change", when(drawMap));
  for (const c of [ui.qLayer, ui.qHead, ui.qToken]) c.addEventListener("change", when(drawQueryPath));
  settingsChanged();
  ui.go.disabled = false;
  root.dataset.state = "ready";
}

main();
