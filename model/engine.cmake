# Owned by the engine component; defines textgen_engine.
