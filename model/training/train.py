"""Trains TransformerLM (model.py) on token arrays from prepare_data.py under a wall-clock budget.

AdamW, linear warmup then cosine decay laid out over the time budget (the decay follows the elapsed fraction of
the budget, so the run ends at the minimum learning rate whatever the machine's speed), gradient clipping,
optional bf16 autocast, checkpoints every few minutes (--resume continues a stopped run: model, optimiser, RNG,
step and elapsed training time), and a final validation loss / perplexity written to metrics.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import ModelConfig, TransformerLM  # noqa: E402


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", required=True, help="dir with train.npy, val.npy, tokenizer.model")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--num-layers", type=int, default=6)
    ap.add_argument("--num-heads", type=int, default=8)
    ap.add_argument("--num-kv-heads", type=int, default=0, help="0 = same as --num-heads")
    ap.add_argument("--d-ff", type=int, default=0, help="0 = about 8/3 d_model rounded to 32")
    ap.add_argument("--context-length", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup-steps", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--time-budget-minutes", type=float, default=60.0)
    ap.add_argument("--max-steps", type=int, default=0, help="optional hard step limit (0 = none)")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast for matmuls")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-every-seconds", type=float, default=300.0)
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--ckpt-every-seconds", type=float, default=240.0)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resume", action="store_true")
    return ap.parse_args()


def lr_at(args: argparse.Namespace, step: int, frac: float) -> float:
    """Linear warmup over steps, then cosine from lr to lr * min_lr_ratio over the budget fraction."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    frac = min(max(frac, 0.0), 1.0)
    min_lr = args.lr * args.min_lr_ratio
    return min_lr + 0.5 * (args.lr - min_lr) * (1.0 + math.cos(math.pi * frac))


def get_batch(data: np.ndarray, batch: int, ctx: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    starts = torch.randint(0, len(data) - ctx - 1, (batch,), generator=gen).numpy()
    chunk = np.stack([data[s:s + ctx + 1] for s in starts]).astype(np.int64)
    t = torch.from_numpy(chunk)
    return t[:, :-1], t[:, 1:]


@torch.no_grad()
def evaluate(model: TransformerLM, data: np.ndarray, ctx: int, batch: int, max_batches: int, bf16: bool) -> float:
    """Mean next-token loss over non-overlapping windows (the first max_batches * batch of them; 0 = all)."""
    model.eval()
    n_windows = (len(data) - 1) // ctx
    if max_batches > 0:
        n_windows = min(n_windows, max_batches * batch)
    total, count = 0.0, 0
    for i in range(0, n_windows, batch):
        idx = range(i, min(i + batch, n_windows))
        chunk = np.stack([data[j * ctx:j * ctx + ctx + 1] for j in idx]).astype(np.int64)
        t = torch.from_numpy(chunk)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(t[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), t[:, 1:].reshape(-1), reduction="sum")
        total += float(loss)
        count += t[:, 1:].numel()
    model.train()
    return total / max(count, 1)


def save_checkpoint(path: str, model, opt, cfg: ModelConfig, state: dict, gen: torch.Generator) -> None:
    tmp = path + ".tmp"
    torch.save({"state_dict": model.state_dict(), "config": cfg.to_dict(), "optimizer": opt.state_dict(),
                "train_state": state, "rng": gen.get_state()}, tmp)
    os.replace(tmp, path)  # Atomic: a kill mid-save never leaves a truncated checkpoint.


def main() -> int:
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    os.makedirs(args.out_dir, exist_ok=True)
    train = np.load(os.path.join(args.data_dir, "train.npy"), mmap_mode="r")
    val = np.load(os.path.join(args.data_dir, "val.npy"), mmap_mode="r")
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.data_dir, "tokenizer.model"))

    d_ff = args.d_ff or int(round(args.d_model * 8 / 3 / 32) * 32)
    cfg = ModelConfig(vocab_size=sp.get_piece_size(), context_length=args.context_length, d_model=args.d_model,
                      num_layers=args.num_layers, num_heads=args.num_heads,
                      num_kv_heads=args.num_kv_heads or args.num_heads, d_ff=d_ff)
    ckpt_path = os.path.join(args.out_dir, "checkpoint.pt")
    gen = torch.Generator().manual_seed(args.seed)
    state = {"step": 0, "elapsed": 0.0, "tokens": 0, "history": []}
    resumed = None
    if args.resume and os.path.exists(ckpt_path):
        resumed = torch.load(ckpt_path, map_location="cpu")
        cfg = ModelConfig.from_dict(resumed["config"])
    model = TransformerLM(cfg)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    if resumed is not None:
        model.load_state_dict(resumed["state_dict"])
        opt.load_state_dict(resumed["optimizer"])
        state = resumed["train_state"]
        gen.set_state(resumed["rng"])
        print(f"resumed from {ckpt_path} at step {state['step']} ({state['elapsed'] / 60:.1f} min trained)")
        del resumed
    print(f"config {cfg.to_dict()}")
    print(f"params {model.num_params():,} (non-embedding {model.num_params(exclude_embeddings=True):,}); "
          f"train tokens {len(train):,}, val tokens {len(val):,}", flush=True)
    with open(os.path.join(args.out_dir, "args.json"), "w") as f:
        json.dump(vars(args), f, indent=1)

    budget = args.time_budget_minutes * 60.0
    tokens_per_step = args.batch_size * args.context_length
    log_path = os.path.join(args.out_dir, "train_log.jsonl")
    t_start = time.time() - state["elapsed"]
    last_ckpt = last_eval = time.time()
    smooth = state.get("smooth")
    val_loss = state.get("val_loss", float("nan"))
    while True:
        elapsed = time.time() - t_start
        if elapsed >= budget or (args.max_steps and state["step"] >= args.max_steps):
            break
        lr = lr_at(args, state["step"], elapsed / budget)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(train, args.batch_size, args.context_length, gen)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip))
        opt.step()
        state["step"] += 1
        state["tokens"] += tokens_per_step
        lv = float(loss)
        smooth = lv if smooth is None else 0.95 * smooth + 0.05 * lv
        state["smooth"] = smooth
        now = time.time()
        state["elapsed"] = now - t_start
        if now - last_eval >= args.eval_every_seconds:
            val_loss = evaluate(model, val, args.context_length, args.batch_size, args.eval_batches, args.bf16)
            last_eval = time.time()
            state["val_loss"] = val_loss
        if state["step"] % args.log_every == 0 or state["step"] == 1:
            tps = state["tokens"] / max(state["elapsed"], 1e-9)
            eta = max(budget - state["elapsed"], 0.0)
            rec = {"step": state["step"], "tokens": state["tokens"], "train_loss": round(smooth, 4),
                   "val_loss": round(val_loss, 4), "lr": lr, "grad_norm": round(gnorm, 3),
                   "tok_per_s": round(tps, 1), "elapsed_min": round(state["elapsed"] / 60, 2)}
            state["history"].append(rec)
            with open(log_path, "a") as f:
                f.write(json.dumps(rec) + "\n")
            print(f"step {state['step']:6d} | train {smooth:.4f} | val {val_loss:.4f} | lr {lr:.2e} | "
                  f"gnorm {gnorm:.2f} | {tps:6.0f} tok/s | {state['tokens'] / 1e6:.2f}M tok | "
                  f"{state['elapsed'] / 60:5.1f}/{args.time_budget_minutes:.0f} min | ETA {eta / 60:.1f} min",
                  flush=True)
        if time.time() - last_ckpt >= args.ckpt_every_seconds:
            save_checkpoint(ckpt_path, model, opt, cfg, state, gen)
            last_ckpt = time.time()

    state["elapsed"] = time.time() - t_start
    save_checkpoint(ckpt_path, model, opt, cfg, state, gen)
    # Export checkpoint: just weights + config (the contract with convert_transformer_lm.py).
    torch.save({"state_dict": model.state_dict(), "config": cfg.to_dict()}, os.path.join(args.out_dir, "final.pt"))
    print("final validation over the whole held-out split...", flush=True)
    val_loss = evaluate(model, val, args.context_length, args.batch_size, 0, args.bf16)
    n = min(len(val), 64 * args.context_length)
    train_eval = evaluate(model, train[:n + 1], args.context_length, args.batch_size, 0, args.bf16)
    metrics = {"config": cfg.to_dict(), "params": model.num_params(),
               "params_non_embedding": model.num_params(exclude_embeddings=True),
               "steps": state["step"], "tokens_seen": state["tokens"],
               "epochs": state["tokens"] / len(train), "train_minutes": state["elapsed"] / 60,
               "final_train_loss_smoothed": smooth, "train_loss_first_window_eval": train_eval,
               "val_loss": val_loss, "val_perplexity": math.exp(val_loss), "val_tokens": int(len(val)),
               "bf16": args.bf16, "threads": args.threads, "batch_size": args.batch_size, "lr": args.lr}
    with open(os.path.join(args.out_dir, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    print(json.dumps(metrics, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
