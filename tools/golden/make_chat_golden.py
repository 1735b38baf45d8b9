#!/usr/bin/env python3
"""Golden chat prompts from transformers' `apply_chat_template`: the chat
templates of today's small instruction-tuned models (as their Hub
tokenizer_config.json files carry them: SmolLM2-Instruct's ChatML with a
default system turn, TinyLlama-Chat's Zephyr layout, Llama 2-Chat's with
`.strip()` and `raise_exception`, Llama 3-Instruct's with `| trim` and
`bos_token`, Qwen2.5-Instruct's with `{%-` whitespace control and a default
system turn), rendered for several conversations, with and without the
generation prompt; the text, and its ids through the SentencePiece fixture
(tests/fixtures/sentencepiece/legacy).

    pip install transformers tokenizers
    python3 tools/golden/make_chat_golden.py

writes tests/fixtures/chat/cases.json. Then a chat with the random Llama of
tests/fixtures/golden/llama_gqa (made by make_llama_golden.py): its
tokenizer_config.json gets a ChatML template ending turns with
<|endoftext|>, and transformers' greedy reply (12 new tokens at most,
stopping at the end of turn) goes to tests/fixtures/chat/llama_gqa_reply.json.
"""
import json
import os

import torch
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER = os.path.join(ROOT, "tests/fixtures/sentencepiece/legacy/tokenizer.json")
OUT = os.path.join(ROOT, "tests/fixtures/chat/cases.json")
LLAMA = os.path.join(ROOT, "tests/fixtures/golden/llama_gqa")
REPLY = os.path.join(ROOT, "tests/fixtures/chat/llama_gqa_reply.json")

# ChatML, each turn closed by the eos token (the random model's vocabulary
# has <|endoftext|> as its one special token).
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + "
          "message['content'] + eos_token + '\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

TEMPLATES = {
    "smollm2": (
        "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
        "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
        "<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
        "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
        "{% endif %}"),
    "tinyllama": (
        "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + "
        "message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + "
        "message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n"
        "{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n"
        "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}"),
    "llama2": (
        "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
        "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
        "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
        "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
        "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
        "{% endif %}{% if loop.index0 == 0 and system_message != false %}"
        "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
        "{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
        "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
        "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"),
    "llama3": (
        "{% set loop_messages = messages %}{% for message in loop_messages %}"
        "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
        "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
        "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"),
    "qwen2.5": """{%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
{%- else %}
    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
""",
}

CONVERSATIONS = [
    [("user", "What is a token?")],
    [("system", "You answer in one sentence."), ("user", "  Why is the sky blue?  ")],
    [("system", "Be brief."), ("user", "Hi!"), ("assistant", " Hello. "), ("user", "2+2 = ?\nThanks 🙂")],
    [("user", "Say \"hi\" <b>bold</b> & {{ braces }} {% not a tag %}")],
]

BAD = [("user", "one"), ("user", "two")]  # roles that do not alternate


def main():
    tok = PreTrainedTokenizerFast(tokenizer_file=TOKENIZER, bos_token="<s>", eos_token="</s>",
                                  unk_token="<unk>")
    cases = []
    for name, template in TEMPLATES.items():
        renders = []
        for turns in CONVERSATIONS:
            messages = [{"role": r, "content": c} for r, c in turns]
            for gen in (True, False):
                text = tok.apply_chat_template(messages, chat_template=template, tokenize=False,
                                               add_generation_prompt=gen)
                ids = tok.apply_chat_template(messages, chat_template=template, tokenize=True,
                                              add_generation_prompt=gen, return_dict=False)
                renders.append({"messages": messages, "add_generation_prompt": gen, "text": text,
                                "ids": list(ids)})
        error = None
        try:
            tok.apply_chat_template([{"role": r, "content": c} for r, c in BAD],
                                    chat_template=template, tokenize=False)
        except Exception as e:  # the template's own raise_exception
            error = str(e)
        cases.append({"name": name, "template": template,
                      "specials": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
                      "renders": renders, "error_for_repeated_user": error})
        print(f"{name}: {len(renders)} renders, error: {error}")
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
    model_reply()


def model_reply():
    eos = "<|endoftext|>"
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": eos, "chat_template": CHATML}
    with open(os.path.join(LLAMA, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(LLAMA, "tokenizer.json"), eos_token=eos)
    messages = [{"role": "user", "content": "Hi"}]  # the model's context is 64 tokens
    ids = tok.apply_chat_template(messages, chat_template=CHATML, tokenize=True,
                                  add_generation_prompt=True, return_dict=False)
    model = LlamaForCausalLM.from_pretrained(LLAMA, dtype=torch.float32)
    out = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False,
                         eos_token_id=tok.convert_tokens_to_ids(eos), pad_token_id=0)
    reply = out[0, len(ids):].tolist()
    assert len(ids) + len(reply) <= model.config.max_position_embeddings
    with open(REPLY, "w", encoding="utf-8") as f:
        json.dump({"user": messages[0]["content"], "prompt_ids": ids,
                   "reply_ids": reply, "reply": tok.decode(reply, skip_special_tokens=True)},
                  f, ensure_ascii=False, indent=1)
    print(f"llama_gqa: {len(ids)} prompt ids, reply {reply}")


if __name__ == "__main__":
    main()
