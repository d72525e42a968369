//! `rubbo`: the Rubbo command line.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod url_cmd;

/// Rubbo: Apache Dubbo, in Rust.
#[derive(Debug, Parser)]
#[command(name = "rubbo", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a Dubbo URL's parts as one JSON object (accepts the percent-encoded form
    /// found in ZooKeeper node names too).
    Url {
        /// The URL, plain or encoded whole.
        url: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Url { url } => url_cmd::run(&url),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rubbo: {e:#}");
            ExitCode::from(2)
        }
    }
}
