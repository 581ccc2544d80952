"""The reviewed allow-list of tests/test_prose_numbers.py: numbers that may be typed in
prose.

Anything a chapter measures is glued from its code instead. What may be typed: the
paper's own numbers (its hyperparameters, its tables, its results), formula constants,
the inputs a chapter chooses for an example, dates. Each entry says why. Integers up to
SMALL_INTEGER_MAX are allowed everywhere: counts in words, indices, chapter numbers, the
paper's h = 8, N = 6. An entry that no longer occurs in its chapter fails the test, so
the list cannot rot."""

SMALL_INTEGER_MAX = 13

# Allowed in every chapter: the paper's base hyperparameters and its year.
GLOBAL = {
    "2017": "the year of the paper (Vaswani et al., 2017)",
    "512": "the paper's d_model (base model, Table 3)",
    "2048": "the paper's d_ff (base model, Table 3)",
    "64": "the paper's d_k = d_v = d_model / h (base model)",
    "0.1": "the paper's P_drop and label-smoothing epsilon (base model, §5.4)",
    "10000": "the constant of the sinusoidal encoding's wavelengths (§3.5)",
    "37000": "the paper's shared byte-pair vocabulary of about 37000 tokens (§5.1)",
    "37,000": "the paper's shared byte-pair vocabulary of about 37000 tokens (§5.1)",
}

ALLOWED: dict[str, dict[str, str]] = {
    "01_qkv_attention": {
        "1,0,1,0": (
            "the worked example's chosen query/key vectors (inputs, checked by hand)"
        ),
        "0,2,0,2": "the worked example's chosen query vector for 'love' (input)",
        "0,1,0,1": "the worked example's chosen key vector for 'love' (input)",
        "2.5": (
            "PyTorch version since which SDPA zeroes fully masked rows (pull request"
            " 133882)"
        ),
        "2.1": (
            "the first of the PyTorch versions (2.1 to 2.4) whose SDPA returns NaN for"
            " a fully masked row"
        ),
        "2.4": "the last PyTorch version whose SDPA returns NaN for a fully masked row",
        "133882": (
            "the number of the PyTorch pull request that made SDPA's softmax 'safe'"
        ),
    },
    "02_scaling": {
        "16": (
            "the chapter's chosen sizes: d_k = 16, 16 keys, values of width 16 (inputs)"
        ),
        "256": "the chapter's chosen key width d_k = 256 (input)",
        "1024": "the chapter's largest chosen key width d_k = 1024 (input)",
        "32": "sqrt(1024) = 32, a formula constant (measured value glued next to it)",
        "7.4": "e^2 = 7.39, arithmetic of the softmax example",
        "20": "the score gap of the e^20 example (a chosen input)",
        "2.77": "ln 16 = 2.77, the entropy of a uniform row over 16 keys (formula)",
        "90": (
            "the chapter's definition of 'at chance': loss above 90% of ln 16 (a"
            " threshold)"
        ),
    },
    "03_multi_head": {
        "1536": "3 x 512 = 1536, the width of the fused W_Q, W_K, W_V matrix (formula)",
        "48": "the 48 random feature dimensions of the hand-made example (input)",
        "1024": (
            "the paper's big model d_model = 1024; 2 d_model = 1024 (formula); L = 1024"
            " (input)"
        ),
        "16": "the paper's big model h = 16; the benchmark's batch B = 16 (input)",
        "100": "the length of a translation sentence, L <~ 100, an order of magnitude",
        "128": "the benchmark's sequence length L = 128 (input)",
    },
    "04_positional_encoding": {
        "32": (
            "the width d_model = 32 of the chapter's example (input); also d_k/2 = 32"
            " pairs"
        ),
        "15": "the last pair index i = 15 of a width-32 table (formula)",
        "16": (
            "d_model/2 = 16 pairs of a width-32 table; sqrt(512/2) = 16; the toy task's"
            " length"
        ),
        "0.001": "10000^(-6/8) = 0.001, the slowest angle of a width-8 table (formula)",
        "24": "2^-24, the float32 rounding unit (formula constant)",
        "5000": (
            "the example position of the float32 precision argument; max_len default"
            " (input)"
        ),
        "100": "the number of positions the heatmap and the explorer show (input)",
        "6.28": "2 pi, the shortest wavelength (the paper's own statement, §3.5)",
        "40": "the explorer dimension suggested to the reader (input)",
    },
    "04b_relative_positions": {
        "32": (
            "d_k/2 = 32 pairs of the base model's head width (formula); the toy width"
            " (input)"
        ),
        "15": "positions 0-15 seen in training by the copy task (input)",
        "16": "the copy task's training length (input)",
        "1000": "the number of positions the rotation check covers (input)",
        "256": "d_model/2 = 256 frequencies of the base model's table (formula)",
        "2021": "the year of RoFormer (Su et al., 2021)",
        "48": (
            "the test length of the copy task, three times the training length (input)"
        ),
    },
    "06_encoder": {
        "32": "the width of the teacher-fitting stacks (input)",
        "30": "the longest random sentence length of the BatchNorm experiment (input)",
        "6.11": "the paper's Table 3 row (C), N = 2: perplexity",
        "5.19": "the paper's Table 3 row (C), N = 4: perplexity",
        "4.92": "the paper's Table 3 base row, N = 6: perplexity",
        "4.88": "the paper's Table 3 row (C), N = 8: perplexity",
        "23.7": "the paper's Table 3 row (C), N = 2: BLEU",
        "25.3": "the paper's Table 3 row (C), N = 4: BLEU",
        "25.8": "the paper's Table 3 base row: BLEU",
        "25.5": "the paper's Table 3 row (C), N = 8: BLEU",
        "36": "the paper's Table 3 row (C), N = 2: 36M parameters",
        "50": "the paper's Table 3 row (C), N = 4: 50M parameters",
        "65": "the paper's Table 3 base row: 65M parameters",
        "80": "the paper's Table 3 row (C), N = 8: 80M parameters",
        "23": "80M / 65M - 1 = 23%, arithmetic on the paper's numbers",
    },
    "07_decoder_cross_attention": {
        "1024": "the paper's big model: d_model = 1024 (Table 3)",
        "16": "the paper's big model: h = 16 heads (Table 3)",
        "4096": "the paper's big model: d_ff = 4096 (Table 3)",
        "0.3": "the paper's big model: P_drop = 0.3 (Table 3)",
        "30": (
            "the paper's own reference number in the quoted sentence ('similar to"
            " [30]')"
        ),
        "32": "the toy model's width d_model = 32 (input)",
        "95": "the accuracy target an exercise sets (input)",
    },
    "08_dropout": {
        "0.0": (
            "tensor2tensor's transformer_base_v1 attention/ReLU dropout rate (its"
            " config)"
        ),
        "0.9": "1 - P_drop = 0.9, the survivors' divisor at the paper's rate (formula)",
        "0.3": (
            "the dropout rate chosen to make the attention-dropout effect visible"
            " (input)"
        ),
        "0.7": "1 - p = 0.7 for that chosen rate (formula)",
        "30": "the number of Monte Carlo samples an exercise asks for (input)",
        "16": (
            "16-bit draws: the width in bits of the integers a mask is drawn as (a"
            " format)"
        ),
        "65536": "2^16, the number of values of a 16-bit integer (a format)",
        "65,536": "2^16, the number of values of a 16-bit integer (a format)",
        "6554": "round(0.1 x 65536), the paper's P_drop at 16-bit resolution (formula)",
        "256": "chapter 12's model width, d_model = 256 of the cpu-full preset (input)",
        "1,024": (
            "chapter 12's model d_ff = 1024 of the cpu-full preset; the timed layer's"
            " width (inputs)"
        ),
        "1,900": (
            "the timed example's tokens per side, about a cpu-full batch's (chosen"
            " input)"
        ),
        "7.8": (
            "4 x 1,900 x 1,024 = 7.8 million entries (arithmetic of the inputs above)"
        ),
    },
    "09_parameter_counting": {
        "65": "the paper's base-model parameter count, 65M (Table 3)",
        "213": "the paper's big-model parameter count, 213M (Table 3)",
        "262,144": (
            "512^2, a term of the classic exercise's formula (arithmetic, asserted in"
            " the next cell)"
        ),
        "4,194,304": (
            "the classic exercise's count for four attention layers (its number,"
            " asserted)"
        ),
        "25": (
            "S = T = 25, the typical sentence length chosen for the FLOP table (input)"
        ),
        "3.3": "the paper's training cost of the base model, 3.3e18 FLOPs (Table 2)",
        "2.3": "the paper's training cost of the big model, 2.3e19 FLOPs (Table 2)",
        "18": "the exponent of the paper's 3.3e18 (Table 2)",
        "19": "the exponent of the paper's 2.3e19 (Table 2)",
        "25,000": "the paper's batches of about 25000 source and target tokens (§5.1)",
        "100,000": "the paper's 100000 training steps for the base model (§5.2)",
        "300,000": "the paper's 300000 training steps for the big model (§5.2)",
        "9.5": "the paper's assumed 9.5 TFLOPS per P100 (its footnote to Table 2)",
        "3.5": "the paper's 3.5 days of training for the big model (§5.2)",
        "16": (
            "4 + 4 + 8 = 16 bytes per parameter with Adam in float32; 16-bit"
            " activations"
        ),
        "32": "32-bit floats (formula); the exercise's 32000-token vocabularies",
        "32,000": "the separate vocabularies an exercise chooses (input)",
    },
    "10_decoding": {
        "0.6": "the paper's length penalty alpha = 0.6 (§6.1)",
        "50": "the paper's maximum output length, input length + 50 (§6.1)",
        "0.25": "one of the temperatures the chapter chooses (input)",
        "0.5": "one of the temperatures the chapter chooses (input)",
        "0.125": "1/8, the uniform probability over the example's 8 words (formula)",
        "2.08": (
            "ln 8 = 2.08, the entropy of the uniform distribution over 8 words"
            " (formula)"
        ),
        "40": "the untrained models' 40 decoding steps (input)",
        "200,000": "the number of sampling draws (input)",
        "500": "the number of test strings (input)",
        "200": "the number of long test strings (input)",
        "2015": "the year of scheduled sampling (Bengio et al., 2015)",
        "2016": "the year of sequence-level training (Ranzato et al., 2016)",
        "256": "the number of generated tokens; the benchmark's d_model = 256 (inputs)",
        "300": "the untrained model's room for 300 positions (input)",
        "16": (
            "4^2 = 16, the growth a quadratic cost would give from 64 to 256 tokens"
            " (formula)"
        ),
    },
    "05_masking": {
        "20": "the number of extra padding tokens the check appends (input)",
    },
    "11a_data": {
        "2014": "WMT 2014, the paper's data set (§5.1)",
        "25000": "the paper's batches of about 25000 source and target tokens (§5.1)",
        "25,000": "the paper's batches of about 25000 source and target tokens (§5.1)",
        "4.5": "the paper's 4.5 million WMT 2014 English-German sentence pairs (§5.1)",
        "256": "SHA-256, the name of the checksum",
        "32": "the largest vocabulary size tried, 32k (input)",
        "16": "the vocabulary size 16k compared (input)",
        "8,000": (
            "the vocabulary size chosen, 8000 joint tokens (the chapter's decision)"
        ),
        "8000": "the vocabulary size chosen, in the formula 8000 x 512",
        "14": "the alternative length limit of 14 tokens (input)",
        "40": "the illustrative 40-token sentence of the padding example (input)",
        "35": "40 - 5 = 35 padded positions of that example (arithmetic)",
        "2,000": "the token budget of the example batch (input)",
        "1,000": "the token budget of the sharding check (input)",
        "100": "the pool of 100 batches an exercise asks for (input)",
    },
    "11b_training": {
        "0.7": "the GPU script's lr_scale (its input, scripts/gpu_run.py)",
        "0.9": (
            "the paper's Adam beta_1 = 0.9 (§5.3); 90% = 1 - epsilon_ls on the true"
            " token"
        ),
        "90": "1 - epsilon_ls = 90% of the smoothed target on the true token (formula)",
        "0.98": "the paper's Adam beta_2 = 0.98 (§5.3)",
        "0.999": "Adam's usual beta_2 = 0.999 (Kingma and Ba), for comparison",
        "0.5": (
            "the exponent -0.5 of the paper's schedule (§5.3); the cpu preset's lr"
            " scale"
        ),
        "1.5": "the exponent -1.5 of the paper's warm-up term (§5.3)",
        "4000": "the paper's warmup_steps = 4000 (§5.3)",
        "4,000": "the paper's warmup_steps = 4000 (§5.3)",
        "50": (
            "1/(1 - 0.98) = 50 steps of Adam memory (formula); input length + 50"
            " (§6.1); 50M"
        ),
        "8,000": "the joint BPE vocabulary chosen in chapter 11a (input)",
        "128": "the compile benchmark's model width d_model = 128 (its input)",
        "25,000": "the paper's batches of about 25000 tokens (§5.1)",
        "0.6": "the paper's length penalty alpha = 0.6 (§6.1)",
        "30": "the resume test's 30 steps (input)",
        "15": "the resume test stops at step 15 (input)",
        "19": "the toy task's 19 batches per epoch (its size, an input of the test)",
        "256": (
            "d_model = 256 of the step benchmark and of the cpu-full preset (inputs)"
        ),
        "12,000": "the GPU script's token budget per batch (its input)",
        "50,000": "25000 source + 25000 target tokens, the paper's batch (§5.1)",
        "0.3": "the paper's dropout for its big model, P_drop = 0.3 (Table 3)",
        "1,014": "the size of Multi30k's validation set (chapter 11a's data)",
        "20": "the GPU script's 20-step dry run and compile probe (its inputs)",
        "25000": (
            "the paper's quotation: ~25000 source and 25000 target tokens per batch"
            " (§5.1)"
        ),
        "200": (
            "the paper's warm-up in tokens: 4000 steps x 50000 tokens = 200 million"
            " (formula)"
        ),
        "27.3": (
            "the paper's base-model BLEU on WMT 2014 English-German (Table 2), cited"
        ),
        "36.52": (
            "the BLEU that Trevett's PyTorch seq2seq tutorial reports on this test set,"
            " cited"
        ),
        "1,000": (
            "1/(1 - 0.999) = 1000 steps of Adam memory (formula); the GPU script's"
            " warm-up (its input)"
        ),
        "6": "chrF's character 6-grams (its definition); the paper's 6 + 6 layers",
        "2014": "WMT 2014, the paper's data set (§5.1)",
        "4.5": "the paper's 4.5 million WMT 2014 English-German pairs (§5.1)",
        "16": (
            "16-bit draws: the width in bits of the integers a dropout mask is drawn as"
            " (a format)"
        ),
        "1,024": (
            "oneDNN's default kernel cache size, ONEDNN_PRIMITIVE_CACHE_CAPACITY (its"
            " documentation)"
        ),
        "8,192": (
            "the kernel cache size transformer_lib sets on import (its input,"
            " training/hardware.py)"
        ),
        "300": (
            "the cpu-full preset's warm-up of 300 steps (a setting, printed in the"
            " table of presets)"
        ),
        "60": (
            "the GPU check's 60 seconds of training steps (a setting of"
            " scripts/gpu_check.py)"
        ),
    },
    "11c_train_cli": {
        "60": "the step count the resumed command asks for (input)",
        "20": "the step count of the two-process run (input)",
        "25,000": (
            "the paper's batches of about 25000 source and 25000 target tokens (§5.1)"
        ),
        "5,000": "an example card's room for 5000 tokens a side, to show K = 5 (input)",
        "600": (
            "the default of --dist-timeout, 600 s (a setting,"
            " TrainConfig.dist_timeout_s)"
        ),
    },
    "12_results_and_attention": {
        "0.6": "the paper's length penalty alpha = 0.6 (§6.1)",
        "27.3": "the paper's base-model BLEU on WMT 2014 English-German (Table 2)",
        "20": "the length bucket 'above 20 pieces' of the BLEU-by-length table (input)",
        "2014": "WMT 2014, the paper's task (§5.1)",
        "25": "the 25th percentile, one of the quantiles the rule shows (input)",
        "50": "the 50th percentile, one of the quantiles the rule shows (input)",
        "75": "the 75th percentile, one of the quantiles the rule shows (input)",
        "95": "the 95th percentile, one of the quantiles the rule shows (input)",
        "100": (
            "batches of 100 sentences; the first 1, 10 and 100 sentences timed (inputs)"
        ),
        "4,000": "the training steps an exercise asks for (input)",
        "4.5": "the paper's 4.5 million WMT 2014 English-German sentence pairs (§5.1)",
        "100,000": (
            "the paper's 100,000 training steps of the base model and of its Table 3"
            " rows (§5.2, Table 3)"
        ),
        "128": "Table 3 rerun: the base row's d_model (the cpu preset's, an input)",
        "16": (
            "Table 3 rerun: the rows' chosen 16 heads and d_k = 16 (inputs,"
            " scripts/table3.py)"
        ),
        "32": (
            "Table 3 rerun: the value width d_v = 32 = 128 / 4 that row (B) keeps (an"
            " input)"
        ),
        "256": "Table 3 rerun: the chosen d_model = 256 of row (C) (an input)",
        "1024": "Table 3 rerun: the chosen d_ff = 1024 of row (C) (an input)",
        "0.2": (
            "Table 3 rerun: the chosen label smoothing 0.2 of row (D), as the paper's"
            " (an input)"
        ),
        "0.3": "Table 3 rerun: the chosen dropout 0.3 of row (D) (an input)",
    },
    "12b_in_the_browser": {
        "0.6": (
            "the paper's length penalty alpha = 0.6 (§6.1), used by the page's beam"
            " search"
        ),
        "16": (
            "the width of float16 in bits ('16-bit weights'), a format, not a"
            " measurement"
        ),
        "32": (
            "the width of float32 in bits ('32-bit floats'), a format, not a"
            " measurement"
        ),
        "0.3": (
            "the export's refusal threshold: the page's BLEU within 0.3 of PyTorch's (a"
            " chosen budget)"
        ),
        "256": "SHA-256, the name of the checksum",
        "390": (
            "the phone-width viewport the browser test narrows the page to, in pixels"
            " (an input)"
        ),
    },
    "13_beyond": {
        "110": "BERT's reported 'Total Parameters=110M' (Devlin et al., 2019)",
        "80": "BERT's 80/10/10 masking rule: 80% [MASK] (its §3.1)",
        "15": "BERT's 15% of positions chosen for prediction (its §3.1)",
        "768": "BERT-base's width d_model = 768 (Devlin et al., 2019)",
        "3072": "BERT-base's d_ff = 3072 (Devlin et al., 2019)",
        "30,522": (
            "BERT-base's WordPiece vocabulary of 30522 tokens (Devlin et al., 2019)"
        ),
        "32": "the shortest sequence length measured, L = 32 (input)",
        "256": "the width d = 256 of the cost comparison; L = 256 (inputs)",
        "2048": "the longest sequence length measured, L = 2048 (input)",
        "16": (
            "the batch of 16 random windows (input); ViT's 16 x 16 patches (its paper)"
        ),
        "20": "the moving average over 20 steps (input)",
        "0.8": "the sampling temperature chosen (input)",
        "200": "an illustrative distance in words ('a subject 200 words back')",
        "1.4": "the smallest positive float32, 1.4e-45 (a constant of the format)",
        "45": "the exponent of the smallest positive float32, 1.4e-45 (a constant)",
        "50": (
            "the asserted bound 1e-50 on the LSTM's gradient (a threshold in the code)"
        ),
        "255": "the distance 255 = 256 - 1 between first and last position (formula)",
        "300": "the number of characters an exercise generates (input)",
    },
}
