# Owned by the sampler component; defines textgen_sampler.
