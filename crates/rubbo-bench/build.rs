//! Generates the tonic baseline's client and server from `proto/echo.proto` (needs `protoc`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/echo.proto");
    tonic_prost_build::configure().compile_protos(&["proto/echo.proto"], &["proto"])?;
    Ok(())
}
