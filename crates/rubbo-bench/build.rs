//! Generates the benchmarks' services twice (needs `protoc`): tonic's client and server
//! for the tonic baseline, and Rubbo's (`rubbo-build`, into `$OUT_DIR/rubbo/`) for the
//! Triple cells. `proto/echo.proto` is the `echo` bench's unary echo, `proto/stream.proto`
//! the `stream` bench's streams (its `bytes` fields are `Bytes` on both sides).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/echo.proto");
    println!("cargo:rerun-if-changed=proto/stream.proto");
    tonic_prost_build::configure().compile_protos(&["proto/echo.proto"], &["proto"])?;
    tonic_prost_build::configure()
        .bytes(".rubbo.bench.stream")
        .compile_protos(&["proto/stream.proto"], &["proto"])?;
    let rubbo_out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("rubbo");
    std::fs::create_dir_all(&rubbo_out)?;
    rubbo_build::configure()
        .out_dir(&rubbo_out)
        .compile_protos(&["proto/echo.proto"], &["proto"])?;
    let mut config = prost_build::Config::new();
    config.bytes([".rubbo.bench.stream"]);
    rubbo_build::configure()
        .out_dir(&rubbo_out)
        .compile_with_config(config, &["proto/stream.proto"], &["proto"])?;
    Ok(())
}
