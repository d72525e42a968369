//! The telnet form (Java's `QosProcessHandler` telnet branch, `TelnetCommandDecoder`,
//! `TelnetProcessHandler`, `CtrlCHandler`): the logo and `dubbo>` prompt, one
//! command per line (at most 2048 bytes), answers ending `\r\ndubbo>`, `quit` says
//! `BYE!` and closes, a session silent for 5 minutes is closed.

use std::net::IpAddr;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::command::{CLOSE, CommandContext, Outcome, Qos, Session};

/// The prompt.
pub const PROMPT: &str = "dubbo>";

/// Java's `DubboLogo.DUBBO`.
pub const LOGO: &str = concat!(
    "   ___   __  __ ___   ___   ____     \n",
    "  / _ \\ / / / // _ ) / _ ) / __ \\  \n",
    " / // // /_/ // _  |/ _  |/ /_/ /    \n",
    "/____/ \\____//____//____/ \\____/   \n",
);

/// The longest line, without its end (Java's `LineBasedFrameDecoder(2048)`).
pub const MAX_LINE: usize = 2048;

/// What telnet sends for Ctrl-C (interrupt process, then "do timing mark").
const CTRL_C: &[u8] = &[0xff, 0xf4, 0xff, 0xfd, 0x06];
/// The answer: "won't timing mark", then a fresh prompt.
const CTRL_C_REPLY: &[u8] = &[0xff, 0xfc, 0x06];

/// Java's `split("(?<![\\\\]) ")`: spaces not after a backslash separate; trailing
/// empty parts are dropped.
fn split_args(line: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut prev = None;
    for c in line.chars() {
        if c == ' ' && prev != Some('\\') {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
        prev = Some(c);
    }
    parts.push(cur);
    while parts.last().is_some_and(String::is_empty) {
        parts.pop();
    }
    parts
}

/// Runs the session until `quit`, end of input, an idle timeout, or `closing`.
/// `first` is the byte read to tell telnet from HTTP, if any.
pub(super) async fn session<S>(
    qos: Qos,
    peer: IpAddr,
    io: S,
    first: Option<u8>,
    closing: CancellationToken,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut rd, mut wr) = tokio::io::split(io);
    wr.write_all(LOGO.as_bytes()).await?;
    wr.write_all(PROMPT.as_bytes()).await?;
    wr.flush().await?;
    let mut line: Vec<u8> = Vec::new();
    let mut pending: Vec<u8> = first.into_iter().collect();
    let mut discarding = false;
    let mut chunk = [0u8; 1024];
    let state = Session::default();
    loop {
        if pending.is_empty() {
            let n = tokio::select! {
                _ = closing.cancelled() => return Ok(()),
                r = tokio::time::timeout(qos.idle, rd.read(&mut chunk)) => match r {
                    Err(_) => {
                        debug!(peer = %peer, "qos telnet session idle, closing");
                        return Ok(());
                    }
                    Ok(r) => r?,
                },
            };
            if n == 0 {
                return Ok(());
            }
            pending.extend_from_slice(&chunk[..n]);
        }
        if pending.windows(CTRL_C.len()).any(|w| w == CTRL_C) {
            pending.clear();
            line.clear();
            wr.write_all(CTRL_C_REPLY).await?;
            wr.write_all(format!("\r\n{PROMPT}").as_bytes()).await?;
            wr.flush().await?;
            continue;
        }
        for b in std::mem::take(&mut pending) {
            if b != b'\n' {
                if !discarding {
                    line.push(b);
                    // Allow for the `\r` that belongs to the line end.
                    if line.len() > MAX_LINE + 1 {
                        discarding = true;
                        line.clear();
                    }
                }
                continue;
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if std::mem::take(&mut discarding) || line.len() > MAX_LINE {
                line.clear();
                let msg = format!("line too long (more than {MAX_LINE} bytes)\r\n{PROMPT}");
                wr.write_all(msg.as_bytes()).await?;
                wr.flush().await?;
                continue;
            }
            let text = String::from_utf8_lossy(&std::mem::take(&mut line)).into_owned();
            match answer(&qos, peer, &text, &state).await {
                Some(out) => {
                    wr.write_all(out.as_bytes()).await?;
                    wr.flush().await?;
                }
                None => {
                    wr.write_all(b"BYE!\n").await?;
                    wr.flush().await?;
                    let _ = wr.shutdown().await;
                    return Ok(());
                }
            }
        }
    }
}

/// What to write for one line; `None` for `quit`.
async fn answer(qos: &Qos, peer: IpAddr, msg: &str, session: &Session) -> Option<String> {
    if msg.trim().is_empty() {
        return Some(PROMPT.to_owned());
    }
    let parts = split_args(msg.trim());
    let (name, args) = parts.split_first()?;
    let ctx = CommandContext {
        http: false,
        peer: Some(peer),
    };
    Some(
        match qos.execute_in(name.trim(), args, ctx, Some(session)).await {
            Outcome::Done(r) if r.body == CLOSE => return None,
            Outcome::Done(r) => format!("{}\r\n{PROMPT}", r.body),
            Outcome::NotFound => format!("{msg} :no such command\r\n{PROMPT}"),
            Outcome::Forbidden => format!("{msg} :permission deny\r\n{PROMPT}"),
            Outcome::Failed(e) => {
                format!("{msg} :fail to execute commandContext by {e}\r\n{PROMPT}")
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_split_at_unescaped_spaces() {
        assert_eq!(split_args("online org.x.*"), ["online", "org.x.*"]);
        assert_eq!(split_args("a b\\ c"), ["a", "b\\ c"]);
        assert_eq!(split_args("a  b"), ["a", "", "b"]);
    }
}
