//! Writes fresh test certificates for the TLS interop cell: a CA (`ca.pem`), a server
//! certificate for 127.0.0.1 (`server.pem`, `server.key`), a client certificate the CA
//! signs (`client.pem`, `client.key`), and one another CA signs (`rogue-client.pem`,
//! `rogue-client.key`, `rogue-ca.pem`). Keys are unencrypted PKCS#8, which Java's
//! Netty and Rubbo both read.
//!
//! Run with: `cargo run -p interop --bin interop-tls-certs -- --out /tmp/certs`

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;

/// Generates the TLS interop certificates.
#[derive(Debug, Parser)]
struct Args {
    /// The directory to write into (created if missing).
    #[arg(long)]
    out: PathBuf,
}

fn main() -> Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let certs = rubbo_remoting::test_certs::generate(&args.out)?;
    println!("{}", certs.ca.display());
    Ok(())
}
