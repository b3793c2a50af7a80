# Sourced by the e2e wrappers that need chat models: make_chat_model MAKE_GGUF LLAMACPP_DIR
# FAMILY CONTEXT OUT [TEMPLATE] writes a tiny random-weight GGUF in FAMILY's layout (qwen2.5,
# qwen3, qwen3.5, llama3.1, mistral-nemo, phi4-mini, gpt-oss or lfm2.5) with its real vocabulary and chat template from
# llama.cpp's source (TEMPLATE: a template file of the family's own from elsewhere).
make_chat_model() {
  _models=$2/models
  case $3 in
    qwen2.5) _arch=qwen2 _vocab=ggml-vocab-qwen2.gguf _template=Qwen-Qwen2.5-7B-Instruct.jinja ;;
    qwen3) _arch=qwen3 _vocab=ggml-vocab-qwen2.gguf _template=Qwen-Qwen3-0.6B.jinja ;;
    # A hybrid (Gated DeltaNet and gated attention) writing qwen3-coder's XML calls.
    qwen3.5) _arch=qwen35 _vocab=ggml-vocab-qwen35.gguf _template=Qwen3.5-4B.jinja ;;
    llama3.1)
      _arch=llama _vocab=ggml-vocab-llama-bpe.gguf
      _template=meta-llama-Llama-3.1-8B-Instruct.jinja ;;
    # llama.cpp ships no Tekken vocabulary: Llama 3's, with Mistral's special tokens appended as
    # control tokens (as Tekken holds them).
    mistral-nemo)
      _arch=llama _vocab=ggml-vocab-llama-bpe.gguf
      _template=mistralai-Mistral-Nemo-Instruct-2407.jinja
      _extra="[INST],[/INST],[TOOL_CALLS],[AVAILABLE_TOOLS],[/AVAILABLE_TOOLS],[TOOL_RESULTS],[/TOOL_RESULTS]" ;;
    # Nor Phi-4-mini's o200k vocabulary or its template (TEMPLATE must name it): Llama 3's
    # vocabulary with Phi-4-mini's role and tool tokens as control tokens.
    phi4-mini)
      _arch=llama _vocab=ggml-vocab-llama-bpe.gguf _template=
      _extra="<|system|>,<|user|>,<|assistant|>,<|end|>,<|tool|>,<|/tool|>,<|tool_call|>,<|/tool_call|>" ;;
    # Nor gpt-oss's o200k_harmony vocabulary: Llama 3's, with the harmony tags as control tokens
    # (as o200k_harmony holds them).
    gpt-oss)
      _arch=gpt-oss _vocab=ggml-vocab-llama-bpe.gguf _template=openai-gpt-oss-120b.jinja
      _extra="<|start|>,<|channel|>,<|message|>,<|end|>,<|return|>,<|call|>,<|constrain|>" ;;
    # Nor LFM2's vocabulary: Llama 3's with LFM2's role and tool tags as control tokens (as
    # LFM2's holds them), a random lfm2 (short convolutions and attention).
    lfm2.5)
      _arch=lfm2 _vocab=ggml-vocab-llama-bpe.gguf _template=LFM2.5-8B-A1B.jinja
      _extra="<|im_start|>,<|im_end|>,<|tool_call_start|>,<|tool_call_end|>,<|tool_list_start|>,<|tool_list_end|>,<|tool_response_start|>,<|tool_response_end|>" ;;
    *) echo "make_chat_model: unknown family $3" >&2; return 2 ;;
  esac
  "$1" --arch "$_arch" --preset tiny --dtype f32 --context "$4" --name "$3-random" \
    --vocab-from "$_models/$_vocab" ${_extra:+--add-control-tokens "$_extra"} \
    --chat-template "${6:-$_models/templates/$_template}" --out "$5"
  unset _extra
}
