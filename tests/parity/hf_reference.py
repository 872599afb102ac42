#!/usr/bin/env python3
"""The reference side of the transformers parity tests (tests/parity/*_test.cpp).

Runs transformers and tokenizers, the reference implementations of the models and tokenizers
Sluice loads, and writes what they compute as JSON for the C++ tests to compare against. Nothing
is downloaded: models are built from configs with random weights, tokenizers are trained here or
read from the pinned packages of scripts/python-requirements.txt (PYTHONPATH=.deps/python).

Commands (each reads and writes JSON files; errors go to stderr with exit status 1):
  models OUT_DIR           builds the random models of MODELS below as HF directories
                           OUT_DIR/<name>/ (config.json, model.safetensors) and writes
                           OUT_DIR/<name>/reference.json: {"sequences": [[ids]], "logits":
                           [[[float]]]}, each sequence run on its own (batch 1, no padding).
  logits REQUEST RESPONSE  REQUEST {"models": [{"dir": d, "sequences": [[ids]]}]}: loads each
                           directory with AutoModelForCausalLM (float32) and writes RESPONSE
                           {"models": [{"dir": d, "logits": [[[float]]]}]}.
  train-bpe OUT_DIR        trains a byte-level BPE tokenizer.json (tokenizers' own trainer, on a
                           small mixed-script corpus, 700 tokens) into OUT_DIR.
  tokenize REQUEST RESPONSE
                           REQUEST {"tokenizers": [tokenizer.json paths], "texts": [str]}:
                           RESPONSE {"tokenizers": [{"path": p, "ids": [[int]], "decoded": [str]}]}
                           with ids = encode(text, add_special_tokens=False).
"""

import json
import os
import random
import sys

# Quiet: the C++ tests show this program's output only when it fails.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# One entry per model family and math option the parity test covers. Sizes are tiny (the test
# runs on CPU in CI); the options are the ones whose math differs between families.
MODELS = {
    # Llama with attention_bias (bias on q, k, v and o), GQA 4:2, untied lm_head, llama3 rope
    # scaling, written in transformers v5's rope_parameters form.
    "llama": dict(
        model_type="llama", vocab_size=320, hidden_size=64, intermediate_size=96,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        attention_bias=True, tie_word_embeddings=False, rms_norm_eps=1e-5,
        max_position_embeddings=256,
        rope_parameters={"rope_type": "llama3", "rope_theta": 50000.0, "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 16}),
    # Qwen2: bias on q, k, v only, tied embeddings, one kv head, plain rope.
    "qwen2": dict(
        model_type="qwen2", vocab_size=300, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
        tie_word_embeddings=True, rms_norm_eps=1e-6, max_position_embeddings=256,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    # Qwen3: per-head q/k RMSNorm, head_dim 32 != hidden / heads, yarn rope scaling (the context
    # the factor implies: 4 x 32 = 128).
    "qwen3": dict(
        model_type="qwen3", vocab_size=310, hidden_size=64, intermediate_size=96,
        num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        tie_word_embeddings=False, rms_norm_eps=1e-6, max_position_embeddings=128,
        rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
                         "original_max_position_embeddings": 32}),
}
SEQUENCE_LENGTHS = (1, 7, 40)


def fail(message):
    print(f"hf_reference: {message}", file=sys.stderr)
    sys.exit(1)


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def dump_json(value, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False)


def randomize(model, torch, seed):
    """Weights far from transformers' init (norm weights 1, biases 0, std 0.02), so a mistake
    in a norm weight, a bias or a scale shows in the logits instead of vanishing in them."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            noise = torch.randn(p.shape, generator=generator, dtype=torch.float32)
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.3 * noise)
            elif name.endswith(".bias"):
                p.copy_(0.2 * noise)
            else:
                p.copy_(0.1 * noise)


def run_logits(model, torch, sequences):
    out = []
    with torch.no_grad():
        for ids in sequences:
            logits = model(torch.tensor([ids], dtype=torch.long)).logits[0]
            out.append(logits.float().tolist())
    return out


def cmd_models(out_dir):
    import torch
    import transformers

    for index, (name, fields) in enumerate(sorted(MODELS.items())):
        fields = dict(fields)
        config = transformers.AutoConfig.for_model(fields.pop("model_type"), **fields)
        torch.manual_seed(index)
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        model.eval()
        randomize(model, torch, 1000 + index)
        directory = os.path.join(out_dir, name)
        model.save_pretrained(directory)
        rng = random.Random(index)
        sequences = [[rng.randrange(config.vocab_size) for _ in range(n)]
                     for n in SEQUENCE_LENGTHS]
        dump_json({"sequences": sequences, "logits": run_logits(model, torch, sequences)},
                  os.path.join(directory, "reference.json"))


def cmd_logits(request_path, response_path):
    import torch
    import transformers

    models = []
    for entry in load_json(request_path)["models"]:
        model = transformers.AutoModelForCausalLM.from_pretrained(entry["dir"],
                                                                  dtype=torch.float32)
        model.eval()
        models.append({"dir": entry["dir"],
                       "logits": run_logits(model, torch, entry["sequences"])})
    dump_json({"models": models}, response_path)


# The training corpus of train-bpe: scripts, digits, whitespace runs and punctuation, so that the
# merges cover multi-byte characters and the pre-tokenizer's classes.
TRAINING_CORPUS = [
    "The quick brown fox jumps over the lazy dog. 1234567890 + 98765 = 99999",
    "def reverse(s):\n    return s[::-1]\n\n\tif x  ==  42:  print('forty two')",
    "Über straße café naïve résumé — “quotes” and ‘single’ … ellipsis",
    "日本語のテキストと中文文本，还有한국어 문장。",
    "emoji 🙂🚀👍🏽 and flags 🇫🇷🇯🇵, arrows → ← ↔",
    "Привет, мир! Ελληνικά γράμματα. עברית ועוד. العربية هنا.",
    "<answer>yes</answer> <tool_call>{\"name\": \"calc\"}</tool_call>",
]


def cmd_train_bpe(out_dir):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<|endoftext|>", "<|im_start|>",
                                                                  "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(TRAINING_CORPUS * 20, trainer=trainer)
    os.makedirs(out_dir, exist_ok=True)
    tokenizer.save(os.path.join(out_dir, "tokenizer.json"))


def cmd_tokenize(request_path, response_path):
    from tokenizers import Tokenizer

    request = load_json(request_path)
    results = []
    for path in request["tokenizers"]:
        tokenizer = Tokenizer.from_file(path)
        ids = [tokenizer.encode(text, add_special_tokens=False).ids for text in request["texts"]]
        decoded = [tokenizer.decode(i, skip_special_tokens=False) for i in ids]
        results.append({"path": path, "ids": ids, "decoded": decoded})
    dump_json({"tokenizers": results}, response_path)


def main(argv):
    commands = {"models": (cmd_models, 1), "logits": (cmd_logits, 2),
                "train-bpe": (cmd_train_bpe, 1), "tokenize": (cmd_tokenize, 2)}
    if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 != commands[argv[1]][1]:
        fail("usage: hf_reference.py models OUT_DIR | logits REQUEST RESPONSE | "
             "train-bpe OUT_DIR | tokenize REQUEST RESPONSE")
    try:
        commands[argv[1]][0](*argv[2:])
    except ImportError as e:
        fail(f"{e}: install the pinned packages with `bash scripts/install-python-deps.sh` and "
             "put .deps/python on PYTHONPATH")


if __name__ == "__main__":
    main(sys.argv)
