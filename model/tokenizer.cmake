# Owned by the tokenizer component; defines textgen_tokenizer.
