"""The container path: locally built images, the compose file and the testcontainers backend.

`engine` runs podman's Docker API socket with the project's own settings, `images` builds the
images from what provisioning fetched, `settings` derives every container's configuration from
the local-process services, `compose` renders docker-compose.yml from it, and `backend` is the
stack whose services are containers.
"""
