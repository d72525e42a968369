//! Reading binary input given as a file or as `--hex`.

use anyhow::{Context, Result, bail};

/// The bytes of `file`, or of `hex` (whitespace and `0x` prefixes ignored).
pub(crate) fn read_bytes(file: Option<&str>, hex: Option<&str>) -> Result<Vec<u8>> {
    match (file, hex) {
        (Some(_), Some(_)) => bail!("give either a FILE or --hex, not both"),
        (Some(f), None) => std::fs::read(f).with_context(|| format!("cannot read {f}")),
        (None, Some(h)) => parse_hex(h),
        (None, None) => bail!("give a FILE or --hex HEX"),
    }
}

fn parse_hex(h: &str) -> Result<Vec<u8>> {
    let digits: String = h
        .split_whitespace()
        .map(|t| t.trim_start_matches("0x"))
        .collect();
    if digits.len() % 2 != 0 {
        bail!("hex input has an odd number of digits ({})", digits.len());
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16).with_context(|| {
                format!(
                    "bad hex digits \"{}\" at offset {}",
                    &digits[i..i + 2],
                    i / 2
                )
            })
        })
        .collect()
}

/// Prints `text` and a newline on stdout; a closed pipe (`rubbo ... | head`) ends the
/// output quietly instead of panicking.
pub(crate) fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => other.context("cannot write to stdout"),
    }
}
