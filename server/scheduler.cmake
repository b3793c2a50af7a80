# Owned by the scheduler component; defines textgen_scheduler.
