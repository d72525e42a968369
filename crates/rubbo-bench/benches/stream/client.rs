//! The client child: connects (Rubbo's or tonic's client), runs one small stream of the
//! workload as a warm-up, says `warm`, waits for `go` on stdin, then runs the measured
//! stream and prints `result` with what it did, its wall time, its own CPU time over
//! that stream and its resident memory (at the start and the peak).

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use bytes::Bytes;

use crate::{Config, Impl, Workload, proc};

/// Checks the echoed notes of a chat: in order, each with the body sent.
pub(crate) struct Check {
    body: Bytes,
    next: u64,
}

impl Check {
    pub(crate) fn new(body: Bytes) -> Self {
        Check { body, next: 0 }
    }

    pub(crate) fn note(&mut self, seq: u64, body: &[u8]) -> anyhow::Result<()> {
        ensure!(
            seq == self.next,
            "note {seq} came back where {} was due",
            self.next
        );
        ensure!(
            body == &self.body[..],
            "note {seq} came back with another body"
        );
        self.next += 1;
        Ok(())
    }

    /// The count of notes, if all `sent` came back.
    pub(crate) fn end(self, sent: u64) -> anyhow::Result<u64> {
        ensure!(self.next == sent, "{} of {sent} notes came back", self.next);
        Ok(sent)
    }
}

/// Counts a download's chunks and bytes, checking sizes and content.
#[derive(Debug, Default)]
pub(crate) struct Downloaded {
    pub(crate) messages: u64,
    pub(crate) bytes: u64,
    short: bool,
}

impl Downloaded {
    pub(crate) fn chunk(&mut self, data: &[u8], chunk: u32) -> anyhow::Result<()> {
        ensure!(
            !self.short,
            "a chunk after a short one (message {})",
            self.messages
        );
        ensure!(
            !data.is_empty() && data.len() <= chunk as usize,
            "chunk {} has {} bytes (chunk size {chunk})",
            self.messages,
            data.len()
        );
        // The first and last byte: enough to see a wrong buffer, not a read of each byte.
        ensure!(
            data[0] == crate::grpc::FILL && data[data.len() - 1] == crate::grpc::FILL,
            "chunk {} holds other bytes",
            self.messages
        );
        self.short = data.len() < chunk as usize;
        self.messages += 1;
        self.bytes += data.len() as u64;
        Ok(())
    }

    pub(crate) fn end(self, size: u64) -> anyhow::Result<Self> {
        ensure!(self.bytes == size, "{} of {size} bytes came", self.bytes);
        Ok(self)
    }
}

enum Client {
    Rubbo(crate::triple::Client),
    Tonic(crate::grpc::Client),
}

impl Client {
    /// Runs one stream; returns the messages and bytes received.
    async fn run(
        &self,
        workload: Workload,
        config: &Config,
        warm: bool,
    ) -> anyhow::Result<(u64, u64)> {
        match workload {
            Workload::Chat => {
                let count = if warm {
                    config.messages.min(1000)
                } else {
                    config.messages
                };
                let body = Bytes::from(vec![b'n'; config.message_bytes]);
                let n = match self {
                    Client::Rubbo(c) => c.chat(count, body).await?,
                    Client::Tonic(c) => c.chat(count, body).await?,
                };
                Ok((n, n * config.message_bytes as u64))
            }
            Workload::Download => {
                let size = if warm {
                    config.bytes.min(4 << 20)
                } else {
                    config.bytes
                };
                let got = match self {
                    Client::Rubbo(c) => c.download(size, config.chunk).await?,
                    Client::Tonic(c) => c.download(size, config.chunk).await?,
                };
                Ok((got.messages, got.bytes))
            }
        }
    }
}

pub(crate) fn client_main(config: &Config) -> anyhow::Result<()> {
    let start = proc::rss("self")?;
    let which: Impl = crate::env("RUBBO_STREAM_BENCH_IMPL", Impl::Tonic)?;
    let workload: Workload = crate::env("RUBBO_STREAM_BENCH_WORKLOAD", Workload::Chat)?;
    let port: u16 = crate::env("RUBBO_STREAM_BENCH_PORT", 0)?;
    ensure!(port != 0, "RUBBO_STREAM_BENCH_PORT is not set");
    let runtime = crate::runtime("st-client", config.client_threads)?;
    let bound = config.timeout;
    let (messages, bytes, elapsed, cpu) = runtime.block_on(async {
        let client = tokio::time::timeout(Duration::from_secs(30), async {
            anyhow::Ok(match which {
                Impl::Rubbo => Client::Rubbo(crate::triple::Client::connect(port, bound).await?),
                Impl::Tonic => Client::Tonic(crate::grpc::Client::connect(port).await?),
            })
        })
        .await
        .context("connecting timed out")??;
        tokio::time::timeout(Duration::from_secs(60), client.run(workload, config, true))
            .await
            .context("the warm-up stream timed out")?
            .context("the warm-up stream")?;
        say("warm")?;
        let go = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        });
        let go = tokio::time::timeout(Duration::from_secs(60), go)
            .await
            .context("no go")???;
        if go.trim() != "go" {
            bail!("expected go on stdin, got {go:?}");
        }
        let cpu0 = proc::cpu("self")?;
        let t0 = Instant::now();
        let (messages, bytes) = tokio::time::timeout(bound, client.run(workload, config, false))
            .await
            .with_context(|| format!("the measured stream took over {bound:?}"))??;
        let elapsed = t0.elapsed();
        let cpu = proc::cpu("self")?.saturating_sub(cpu0);
        anyhow::Ok((messages, bytes, elapsed, cpu))
    })?;
    let end = proc::rss("self")?;
    say(&format!(
        "result {messages} {bytes} {} {} {} {}",
        elapsed.as_nanos(),
        cpu.as_nanos(),
        start.now,
        end.peak
    ))?;
    // Not waiting for the runtime's tasks (the connection) to wind down.
    std::process::exit(0);
}

/// One line to the parent.
pub(crate) fn say(line: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}
