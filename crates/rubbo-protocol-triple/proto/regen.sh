#!/usr/bin/env bash
# Regenerates builtin.bin, the encoded FileDescriptorSet (with source info, so
# `grpcurl describe` shows the comments) of the services every Triple server
# serves itself: health and reflection (v1 and v1alpha). Needs protoc.
# The crate's tests check that builtin.bin matches these .proto files' messages.
set -euo pipefail
cd "$(dirname "$0")"
protoc --include_source_info -o builtin.bin -I . \
    grpc/health/v1/health.proto \
    grpc/reflection/v1/reflection.proto \
    grpc/reflection/v1alpha/reflection.proto
