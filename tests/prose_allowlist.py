"""The reviewed allow-list of tests/test_prose_numbers.py: numbers that may be typed in prose.

Anything a chapter measures is glued from its code instead. What may be typed: the paper's
own numbers (its hyperparameters, its tables, its results), formula constants, the inputs a
chapter chooses for an example, dates. Each entry says why. Integers up to SMALL_INTEGER_MAX
are allowed everywhere: counts in words, indices, chapter numbers, the paper's h = 8, N = 6.
An entry that no longer occurs in its chapter fails the test, so the list cannot rot.
"""

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
        "1,0,1,0": "the worked example's chosen query/key vectors (inputs, checked by hand)",
        "0,2,0,2": "the worked example's chosen query vector for 'love' (input)",
        "0,1,0,1": "the worked example's chosen key vector for 'love' (input)",
        "2.5": "PyTorch version since which SDPA zeroes fully masked rows (pull request 133882)",
        "2.1": "the oldest PyTorch that pyproject.toml allows (torch>=2.1)",
        "2.4": "the last PyTorch version whose SDPA returns NaN for a fully masked row",
        "133882": "the number of the PyTorch pull request that made SDPA's softmax 'safe'",
    },
    "02_scaling": {
        "16": "the chapter's chosen sizes: d_k = 16, 16 keys, values of width 16 (inputs)",
        "256": "the chapter's chosen key width d_k = 256 (input)",
        "1024": "the chapter's largest chosen key width d_k = 1024 (input)",
        "32": "sqrt(1024) = 32, a formula constant (measured value glued next to it)",
        "7.4": "e^2 = 7.39, arithmetic of the softmax example",
        "20": "the score gap of the e^20 example (a chosen input)",
        "2.77": "ln 16 = 2.77, the entropy of a uniform row over 16 keys (formula)",
        "90": "the chapter's definition of 'at chance': loss above 90% of ln 16 (a threshold)",
    },
    "03_multi_head": {
        "1536": "3 x 512 = 1536, the width of the fused W_Q, W_K, W_V matrix (formula)",
        "48": "the 48 random feature dimensions of the hand-made example (input)",
        "1024": "the paper's big model d_model = 1024; 2 d_model = 1024 (formula); L = 1024 (input)",
        "16": "the paper's big model h = 16; the benchmark's batch B = 16 (input)",
        "100": "the length of a translation sentence, L <~ 100, an order of magnitude",
        "128": "the benchmark's sequence length L = 128 (input)",
    },
    "04_positional_encoding": {
        "32": "the width d_model = 32 of the source notes' example (input); also d_k/2 = 32 pairs",
        "15": "the last pair index i = 15 of a width-32 table (formula)",
        "16": "d_model/2 = 16 pairs of a width-32 table; sqrt(512/2) = 16; the toy task's length",
        "0.001": "10000^(-6/8) = 0.001, the slowest angle of a width-8 table (formula)",
        "24": "2^-24, the float32 rounding unit (formula constant)",
        "5000": "the example position of the float32 precision argument; max_len default (input)",
        "100": "the number of positions the heatmap and the explorer show (input)",
        "6.28": "2 pi, the shortest wavelength (the paper's own statement, §3.5)",
        "2018": "the year pretrained word tables stopped being the default (BERT, GPT): a date",
        "40": "the explorer dimension suggested to the reader (input)",
    },
    "04b_relative_positions": {
        "32": "d_k/2 = 32 pairs of the base model's head width (formula); the toy width (input)",
        "15": "positions 0-15 seen in training by the copy task (input)",
        "16": "the copy task's training length (input)",
        "1000": "the number of positions the rotation check covers (input)",
        "256": "d_model/2 = 256 frequencies of the base model's table (formula)",
        "2021": "the year of RoFormer (Su et al., 2021)",
        "48": "the test length of the copy task, three times the training length (input)",
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
        "30": "the paper's own reference number in the quoted sentence ('similar to [30]')",
        "32": "the toy model's width d_model = 32 (input)",
        "95": "the accuracy target an exercise sets (input)",
    },
    "08_dropout": {
        "0.0": "tensor2tensor's transformer_base_v1 attention/ReLU dropout rate (its config)",
        "0.9": "1 - P_drop = 0.9, the survivors' divisor at the paper's rate (formula)",
        "0.3": "the dropout rate chosen to make the attention-dropout effect visible (input)",
        "0.7": "1 - p = 0.7 for that chosen rate (formula)",
        "30": "the number of Monte Carlo samples an exercise asks for (input)",
    },
    "09_parameter_counting": {
        "65": "the paper's base-model parameter count, 65M (Table 3)",
        "213": "the paper's big-model parameter count, 213M (Table 3)",
        "262,144": "512^2, a term of the seed's formula (arithmetic, asserted in the next cell)",
        "4,194,304": "the seed note's count for four attention layers (its number, asserted)",
        "25": "S = T = 25, the typical sentence length chosen for the FLOP table (input)",
        "3.3": "the paper's training cost of the base model, 3.3e18 FLOPs (Table 2)",
        "2.3": "the paper's training cost of the big model, 2.3e19 FLOPs (Table 2)",
        "18": "the exponent of the paper's 3.3e18 (Table 2)",
        "19": "the exponent of the paper's 2.3e19 (Table 2)",
        "25,000": "the paper's batches of about 25000 source and target tokens (§5.1)",
        "100,000": "the paper's 100000 training steps for the base model (§5.2)",
        "300,000": "the paper's 300000 training steps for the big model (§5.2)",
        "9.5": "the paper's assumed 9.5 TFLOPS per P100 (its footnote to Table 2)",
        "3.5": "the paper's 3.5 days of training for the big model (§5.2)",
        "16": "4 + 4 + 8 = 16 bytes per parameter with Adam in float32; 16-bit activations",
        "32": "32-bit floats (formula); the exercise's 32000-token vocabularies",
        "32,000": "the separate vocabularies an exercise chooses (input)",
    },
}
