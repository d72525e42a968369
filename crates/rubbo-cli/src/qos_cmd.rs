//! `rubbo qos HOST:PORT CMD [ARGS]`: one QoS command over HTTP (`GET /CMD?arg1=..`),
//! its answer on stdout; exit 1 when the status is not 200 (a failed probe's 503, an
//! unknown command's 404, a forbidden one's 403).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long the whole exchange may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The request line's target: `/cmd?arg1=a&arg2=b` (the server takes the values in
/// order, whatever their names).
pub(crate) fn target(command: &str, args: &[String]) -> String {
    let mut t = format!("/{}", encode(command));
    for (i, a) in args.iter().enumerate() {
        t.push(if i == 0 { '?' } else { '&' });
        t.push_str(&format!("arg{}={}", i + 1, encode(a)));
    }
    t
}

pub(crate) fn run(address: &str, command: &str, args: &[String]) -> Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    let (status, body) = runtime.block_on(async {
        tokio::time::timeout(TIMEOUT, request(address, &target(command, args)))
            .await
            .with_context(|| format!("no answer from {address} within {TIMEOUT:?}"))?
    })?;
    crate::input::emit(&body)?;
    Ok(if status == 200 {
        ExitCode::SUCCESS
    } else {
        eprintln!("rubbo: {address} answered {status}");
        ExitCode::from(1)
    })
}

async fn request(address: &str, target: &str) -> Result<(u16, String)> {
    let mut s = TcpStream::connect(address)
        .await
        .with_context(|| format!("cannot connect to {address}"))?;
    let req = format!("GET {target} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await?;
    let text = String::from_utf8_lossy(&raw);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        bail!("not an HTTP answer from {address}: {text:?}");
    };
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no status in {head:?}"))?;
    Ok((status, body.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_become_query_values_in_order() {
        assert_eq!(target("ls", &[]), "/ls");
        assert_eq!(
            target("offline", &["org.x.*".into(), "a b".into()]),
            "/offline?arg1=org.x.%2A&arg2=a%20b"
        );
    }
}
