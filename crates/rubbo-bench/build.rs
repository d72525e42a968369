//! Generates the echo service from `proto/echo.proto` twice (needs `protoc`): tonic's
//! client and server for the tonic baseline, and Rubbo's (`rubbo-build`, into
//! `$OUT_DIR/rubbo/`) for the Triple cells.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/echo.proto");
    tonic_prost_build::configure().compile_protos(&["proto/echo.proto"], &["proto"])?;
    let rubbo_out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("rubbo");
    std::fs::create_dir_all(&rubbo_out)?;
    rubbo_build::configure()
        .out_dir(&rubbo_out)
        .compile_protos(&["proto/echo.proto"], &["proto"])?;
    Ok(())
}
