"""A small tokenizer made here, for AIPerf (and GuideLLM) to count tokens with, instead of downloading one.

    <peers venv>/bin/python bench/peers/tokenizer.py DIR

Built with the `tokenizers` library (installed with the tools): a word-level
vocabulary of the words the scripted server and the prompts use (`tokN`,
the nonce line, the prompt), whitespace pre-tokenisation, saved as
tokenizer.json + tokenizer_config.json so that transformers'
AutoTokenizer.from_pretrained(DIR) loads it. The bench's figures do not
depend on token counts (the server's own records are the truth); the tools
only need some tokenizer to start.
"""

import json
import sys
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    words = ["[UNK]", "[nonce", "]", "say", "something"] + [f"tok{i}" for i in range(4096)] + [str(d) for d in range(10)]
    vocab = {word: index for index, word in enumerate(dict.fromkeys(words))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "model_max_length": 1 << 20}))
    (out / "special_tokens_map.json").write_text(json.dumps({"unk_token": "[UNK]"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
