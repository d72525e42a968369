//! Generates the `Hello` service from `proto/hello.proto` with rubbo-build (needs `protoc`).

fn main() -> std::io::Result<()> {
    rubbo_build::compile_protos("proto/hello.proto")
}
