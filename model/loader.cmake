# Owned by the loader component; defines textgen_loader.
