# Owned by the service component; defines textgen_service and textgen-server.
