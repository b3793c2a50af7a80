/* llamacpp-ref: asks llama.cpp itself (the prebuilt libllama from the npm package
 * @node-llama-cpp/linux-x64, built at test time against the same release's llama.h) what a GGUF
 * file means, for textgen's reference tests. Never part of textgen.
 *
 *   llamacpp-ref logits MODEL IDS OUT      IDS "1,2,3": one batch, causal; writes f32 logits of
 *                                          every position [n, vocab] to OUT. F32 KV cache, flash
 *                                          attention off, 1 thread (deterministic).
 *   llamacpp-ref embed MODEL IDS OUT       the same batch with embeddings on: writes the pooled f32
 *                                          embedding [n_embd] (the file's pooling_type), not
 *                                          normalized
 *   llamacpp-ref tokenize MODEL TEXTFILE [parse-special]
 *                                          prints the ids of the file's text, one per line, with
 *                                          the vocabulary's special tokens added (BOS...); control
 *                                          tokens written in the text are parsed only when asked
 *   llamacpp-ref eog MODEL                 prints the ids llama.cpp treats as end of generation
 *   llamacpp-ref quantize IN OUT FTYPE     FTYPE: a LLAMA_FTYPE_MOSTLY_* number (7 = Q8_0,
 *                                          2 = Q4_0, 15 = Q4_K_M, 17 = Q5_K_M, 18 = Q6_K)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char* text, void* data) {
  (void)data;
  if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static struct llama_model* load(const char* path, bool vocab_only) {
  struct llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  mp.vocab_only = vocab_only;
  struct llama_model* model = llama_model_load_from_file(path, mp);
  if (model == NULL) fprintf(stderr, "llamacpp-ref: cannot load %s\n", path);
  return model;
}

/* Runs IDS ("1,2,3") through MODEL as one causal batch (F32 KV cache, flash attention off,
 * 1 thread: deterministic) and writes to OUT either the f32 logits of every position [n, vocab]
 * or, with `embeddings`, the pooled embedding [n_embd] as the model's pooling_type says (not
 * normalized). */
static int run(const char* path, const char* ids_csv, const char* out_path, bool embeddings) {
  struct llama_model* model = load(path, false);
  if (model == NULL) return 1;
  int n = 1;
  for (const char* c = ids_csv; *c; ++c) n += *c == ',';
  llama_token* ids = malloc(sizeof(llama_token) * n);
  char* copy = strdup(ids_csv);
  int k = 0;
  for (char* tok = strtok(copy, ","); tok != NULL; tok = strtok(NULL, ",")) ids[k++] = atoi(tok);
  n = k;
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = n < 64 ? 64 : (uint32_t)n;
  cp.n_batch = cp.n_ctx;
  cp.n_ubatch = cp.n_ctx;
  cp.n_threads = cp.n_threads_batch = 1;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.no_perf = true;
  cp.embeddings = embeddings;
  struct llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == NULL) {
    fprintf(stderr, "llamacpp-ref: cannot create a context\n");
    return 1;
  }
  struct llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    batch.token[i] = ids[i];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = n;
  if (llama_decode(ctx, batch) != 0) {
    fprintf(stderr, "llamacpp-ref: llama_decode failed\n");
    return 1;
  }
  FILE* out = fopen(out_path, "wb");
  if (out == NULL) return 1;
  if (embeddings) {
    const float* pooled = llama_get_embeddings_seq(ctx, 0);
    if (pooled == NULL) {
      fprintf(stderr, "llamacpp-ref: no pooled embedding (does the file set pooling_type?)\n");
      return 1;
    }
    fwrite(pooled, sizeof(float), llama_model_n_embd(model), out);
  } else {
    const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    for (int i = 0; i < n; ++i) fwrite(llama_get_logits_ith(ctx, i), sizeof(float), vocab, out);
  }
  fclose(out);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  free(copy);
  free(ids);
  return 0;
}

static int tokenize(const char* path, const char* text_path, bool parse_special) {
  struct llama_model* model = load(path, true);
  if (model == NULL) return 1;
  FILE* f = fopen(text_path, "rb");
  if (f == NULL) return 1;
  fseek(f, 0, SEEK_END);
  const long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = malloc(size + 1);
  if (fread(text, 1, size, f) != (size_t)size) return 1;
  fclose(f);
  const int capacity = (int)size + 16;
  llama_token* ids = malloc(sizeof(llama_token) * capacity);
  const int n = llama_tokenize(llama_model_get_vocab(model), text, (int)size, ids, capacity,
                               /*add_special=*/true, parse_special);
  if (n < 0) return 1;
  for (int i = 0; i < n; ++i) printf("%d\n", ids[i]);
  free(ids);
  free(text);
  llama_model_free(model);
  return 0;
}

static int eog(const char* path) {
  struct llama_model* model = load(path, true);
  if (model == NULL) return 1;
  const struct llama_vocab* vocab = llama_model_get_vocab(model);
  for (int id = 0; id < llama_vocab_n_tokens(vocab); ++id) {
    if (llama_vocab_is_eog(vocab, id)) printf("%d\n", id);
  }
  llama_model_free(model);
  return 0;
}

static int quantize(const char* in, const char* out, int ftype) {
  struct llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.ftype = (enum llama_ftype)ftype;
  qp.nthread = 2;
  return llama_model_quantize(in, out, &qp) == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  llama_log_set(quiet, NULL);
  /* The CPU backends (one per ISA level) sit next to libllama; it picks the best for this CPU. */
  ggml_backend_load_all_from_path(LLAMACPP_BACKEND_DIR);
  llama_backend_init();
  if (argc == 5 && strcmp(argv[1], "logits") == 0) return run(argv[2], argv[3], argv[4], false);
  if (argc == 5 && strcmp(argv[1], "embed") == 0) return run(argv[2], argv[3], argv[4], true);
  if (argc == 4 && strcmp(argv[1], "tokenize") == 0) return tokenize(argv[2], argv[3], false);
  if (argc == 5 && strcmp(argv[1], "tokenize") == 0 && strcmp(argv[4], "parse-special") == 0) {
    return tokenize(argv[2], argv[3], true);
  }
  if (argc == 3 && strcmp(argv[1], "eog") == 0) return eog(argv[2]);
  if (argc == 5 && strcmp(argv[1], "quantize") == 0) return quantize(argv[2], argv[3], atoi(argv[4]));
  fprintf(stderr, "usage: llamacpp-ref logits|embed MODEL IDS OUT | tokenize MODEL TEXTFILE [parse-special] | "
                  "eog MODEL | "
                  "quantize IN OUT FTYPE\n");
  return 2;
}
