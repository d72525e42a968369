//! Generates the contract's Greeter (`interop/proto/greeter.proto`, shared with the
//! Java peers) and gRPC's interop `grpc.testing.TestService`
//! (`interop/proto/grpc/testing/test.proto`, with its imports) with rubbo-build, and
//! a tonic client and server of both (in `$OUT_DIR/tonic`) for the gRPC
//! compatibility tests. Needs `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let greeter = "../../interop/proto/greeter.proto";
    let testing = "../../interop/proto/grpc/testing/test.proto";
    let include = "../../interop/proto";
    rubbo_build::configure().compile_protos(&[greeter, testing], &[include])?;
    let tonic = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("tonic");
    std::fs::create_dir_all(&tonic)?;
    tonic_prost_build::configure()
        .out_dir(&tonic)
        .compile_protos(&[greeter, testing], &[include])?;
    Ok(())
}
