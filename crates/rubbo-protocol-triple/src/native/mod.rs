//! Triple's native HTTP/2 server transport, for connections that open with the
//! HTTP/2 preface (prior knowledge: gRPC clients, Java Triple, grpc-go).
//!
//! Why not hyper: on hyper + h2 a Triple call costs about as many instructions as
//! tonic's (113.5k against 107.3k per call, callgrind, whole server process, 16 B at
//! 256 in flight; `crates/rubbo-bench/README.md`), and almost all of it is the HTTP/2
//! stack: hyper's task and body plumbing per request and h2's stream store behind a
//! lock shared by every stream task. No crate offers an HTTP/2 server specialised for
//! gRPC, so, as grpc-go does with its own `http2_server.go` over a frame codec and
//! HPACK, this one is written for it:
//!
//! - one task per connection owns the socket and every stream's state (no lock): it
//!   reads frames with h2's frame codec (`h2::Codec`, its `unstable` API, pinned:
//!   frame parsing, CONTINUATION, padding, frame and header-list size limits, HPACK
//!   decoding with Huffman and the dynamic table), and writes frames itself
//!   ([`hpack`] encodes response headers with static indices, a few dynamic-table
//!   entries for the fields every gRPC response repeats, and literals);
//! - each call is [`Handler::handle`] (the same routing, modes, compression,
//!   deadlines, executions bound, built-ins as on hyper), polled first by the
//!   connection task itself once its request ended: a call that answers at once (a
//!   unary call to a service that does not wait) costs no task, wake-up or channel,
//!   and the answers of calls read together go out in one write, 64 calls at most so
//!   that the client gets the first ones while the server works on the next; a call
//!   that waits goes on in a task of its own and hands its response back over a
//!   channel, as do all calls for a while after a first poll over 200 µs (a handler
//!   that computes or blocks does not hold up the connection's other streams);
//!   response bodies are pulled only while the stream and connection windows are
//!   open and the write buffer is under [`conn::HIGH`](conn) bytes, so a streaming
//!   sender waits for the peer;
//! - a request's DATA is returned to the peer's windows (stream and connection,
//!   `initial_window` of [`H2Settings`]) only as the call reads it (a request that
//!   ended before its call started is handed to the call whole, and its bytes go back
//!   to the connection's window then);
//! - frames of calls that finish together go out in one write (`coalesce.rs`): headers
//!   and small payloads copied into one buffer, large DATA payloads written from their
//!   own buffers (`writev`), and a large stream message goes out uncopied behind its
//!   gRPC prefix, the two in the same DATA frames;
//! - connection errors answer GOAWAY with RFC 9113's code, stream errors RST_STREAM;
//!   streams over `max_concurrent_streams` are refused (REFUSED_STREAM); RST_STREAM
//!   from the client cancels the call's task; the server's shutdown sends GOAWAY with
//!   the last stream and drains the calls running.
//!
//! Measured (callgrind, the same bench cell, whole process with the same client): about
//! 96.6k instructions per call against 111.4k on hyper and 105.5k for tonic's server
//! (`crates/rubbo-bench/README.md`). Streams: same README, "Peak memory, and the
//! download's extra copy".
//!
//! Anything else on the port (HTTP/1.1, the JSON form, the h2c upgrade) goes to the
//! hyper path with the bytes sniffed replayed ([`sniff`]).

mod conn;
mod hpack;
mod recv;
pub(crate) mod sniff;

use std::future::poll_fn;
use std::sync::Arc;

use rubbo_common::Peer;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tracing::debug;

pub(crate) use recv::RecvBody;

use crate::coalesce::Busy;
use crate::config::H2Settings;
use crate::server::Handler;

/// Serves a connection whose HTTP/2 preface was read, until the peer closes it, a
/// connection error, or (after `stopped` turns true) the calls running drained.
pub(crate) async fn serve<IO>(
    io: IO,
    peer: Arc<Peer>,
    settings: H2Settings,
    handler: Arc<Handler>,
    busy: Arc<Busy>,
    mut stopped: watch::Receiver<bool>,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut conn = conn::Conn::new(io, peer, settings, handler, busy);
    if *stopped.borrow() {
        conn.go_away();
    }
    let stopping = tokio::select! {
        () = poll_fn(|cx| conn.poll(cx)) => false,
        _ = stopped.changed() => true,
    };
    if stopping {
        conn.go_away();
        poll_fn(|cx| conn.poll(cx)).await;
    }
    conn.shutdown().await;
    debug!("native HTTP/2 connection closed");
}
