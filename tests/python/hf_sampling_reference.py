#!/usr/bin/python3
"""Hugging Face-style logits processing in PyTorch, the oracle for sampler_test's comparison.

Follows transformers' RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper,
TopKLogitsWarper, TopPLogitsWarper and MinPLogitsWarper (applied in that order, min_tokens_to_keep
= 1), plus OpenAI's presence/frequency formula and an additive logit bias, in float64.

    hf_sampling_reference.py IN OUT
IN holds cases of 5 lines each:
    temperature top_k top_p min_p repetition_penalty presence_penalty frequency_penalty
    bias: id value id value ...
    prompt: ids...
    generated: ids...
    logits: floats...
OUT gets one line of final probabilities per case. Exit 77 if torch is missing.
"""

import sys

try:
    import torch
except ImportError:
    sys.exit(77)


def process(params, bias, prompt, generated, logits):
    t, top_k, top_p, min_p, rep, presence, frequency = params
    top_k = int(top_k)
    scores = torch.tensor(logits, dtype=torch.float64)[None, :]
    for i in range(0, len(bias), 2):
        scores[0, int(bias[i])] += bias[i + 1]
    # RepetitionPenaltyLogitsProcessor over input_ids = prompt + generated.
    input_ids = torch.tensor([[int(x) for x in prompt + generated]], dtype=torch.long)
    if rep != 1.0 and input_ids.numel():
        score = torch.gather(scores, 1, input_ids)
        score = torch.where(score < 0, score * rep, score / rep)
        scores = scores.scatter(1, input_ids, score)
    # OpenAI: mu[j] - c[j] * frequency - (c[j] > 0) * presence over generated tokens.
    counts = torch.zeros_like(scores)
    for g in generated:
        counts[0, int(g)] += 1
    scores = scores - counts * frequency - (counts > 0).double() * presence
    # TemperatureLogitsWarper.
    scores = scores / t
    # TopKLogitsWarper.
    if top_k > 0:
        k = min(top_k, scores.size(-1))
        remove = scores < torch.topk(scores, k)[0][..., -1, None]
        scores = scores.masked_fill(remove, -float("inf"))
    # TopPLogitsWarper.
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_remove = cumulative <= (1 - top_p)
        sorted_remove[..., -1:] = 0
        remove = sorted_remove.scatter(1, sorted_indices, sorted_remove)
        scores = scores.masked_fill(remove, -float("inf"))
    # MinPLogitsWarper.
    if min_p > 0.0:
        probs = torch.softmax(scores, dim=-1)
        remove = probs < min_p * probs.amax(dim=-1, keepdim=True)
        sorted_indices = torch.argsort(scores, descending=True, dim=-1)
        sorted_remove = torch.gather(remove, dim=-1, index=sorted_indices)
        sorted_remove[..., :1] = False
        remove = sorted_remove.scatter(1, sorted_indices, sorted_remove)
        scores = scores.masked_fill(remove, -float("inf"))
    return torch.softmax(scores, dim=-1)[0]


def main():
    lines = [l.split() for l in open(sys.argv[1]).read().splitlines() if l.strip()]
    out = []
    for i in range(0, len(lines), 5):
        params = [float(x) for x in lines[i]]
        bias = [float(x) for x in lines[i + 1][1:]]
        prompt = [int(x) for x in lines[i + 2][1:]]
        generated = [int(x) for x in lines[i + 3][1:]]
        logits = [float(x) for x in lines[i + 4][1:]]
        probs = process(params, bias, prompt, generated, logits)
        out.append(" ".join(f"{p:.10g}" for p in probs.tolist()))
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
