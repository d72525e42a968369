//! Incremental frame decoder: sticky and half packets, payload limit, zero copy.

use bytes::{Buf, BytesMut};

use super::header::{HEADER_LEN, Header};
use super::message::{BrokenRequest, Request, Response};
use crate::Status;

/// Why a byte stream cannot be decoded any further. The connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The first two bytes of a frame are not `0xDABB`.
    #[error("bad magic 0x{found:04x}, expected 0xdabb")]
    BadMagic {
        /// The two bytes found.
        found: u16,
    },
    /// The header announced a negative body length.
    #[error("negative body length {len}")]
    NegativeLength {
        /// The announced length.
        len: i32,
    },
}

/// One unit produced by [`Decoder::decode`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decoded {
    /// A request. An over-payload request arrives with
    /// [`broken`](Request::broken) set and an empty body.
    Request(Request),
    /// A response.
    Response(Response),
    /// A response whose announced length exceeds the payload limit; its body is
    /// being skipped.
    ResponseTooLarge {
        /// Id of the request it answers.
        id: i64,
        /// Serialization id of the header.
        serialization: u8,
        /// Event flag of the header.
        event: bool,
        /// Announced body length.
        len: usize,
        /// Configured limit.
        max: usize,
    },
}

#[derive(Debug)]
enum State {
    Header,
    Body(Header),
    Skip(usize),
}

/// Decodes frames from an accumulating buffer.
///
/// Feed bytes into a [`BytesMut`] and call [`decode`](Decoder::decode) until it
/// returns `Ok(None)`. Bodies are split off the buffer without copying. A body
/// longer than the payload limit is never buffered: its header is reported at once
/// and its bytes are discarded as they arrive.
///
/// ```
/// use bytes::BytesMut;
/// use rubbo_remoting::{Decoded, Decoder};
/// let mut d = Decoder::new(8 * 1024 * 1024);
/// let mut buf = BytesMut::from(&[0xda, 0xbb, 0xe2, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0][..]);
/// assert_eq!(d.decode(&mut buf).unwrap(), None); // half a packet
/// buf.extend_from_slice(&[1, 0x4e]);
/// let Some(Decoded::Request(req)) = d.decode(&mut buf).unwrap() else { panic!() };
/// assert!(req.is_heartbeat() && req.two_way && req.id == 7);
/// ```
#[derive(Debug)]
pub struct Decoder {
    max_payload: usize,
    state: State,
}

impl Decoder {
    /// A decoder with the `payload` limit in bytes; `payload <= 0` disables it.
    pub fn new(payload: i64) -> Self {
        let max_payload = if payload <= 0 {
            usize::MAX
        } else {
            usize::try_from(payload).unwrap_or(usize::MAX)
        };
        Decoder {
            max_payload,
            state: State::Header,
        }
    }

    /// Decodes the next unit from `src`, or `Ok(None)` when more bytes are needed.
    pub fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Decoded>, DecodeError> {
        loop {
            match self.state {
                State::Skip(remaining) => {
                    let n = remaining.min(src.len());
                    src.advance(n);
                    if n < remaining {
                        self.state = State::Skip(remaining - n);
                        return Ok(None);
                    }
                    self.state = State::Header;
                }
                State::Header => {
                    let Some(header) = Header::decode(src)? else {
                        return Ok(None);
                    };
                    let Ok(len) = usize::try_from(header.body_len) else {
                        return Err(DecodeError::NegativeLength {
                            len: header.body_len,
                        });
                    };
                    src.advance(HEADER_LEN);
                    if len > self.max_payload {
                        self.state = State::Skip(len);
                        return Ok(Some(self.too_large(header, len)));
                    }
                    if src.len() >= len {
                        return Ok(Some(frame(header, src, len)));
                    }
                    reserve_body(src, len);
                    self.state = State::Body(header);
                    return Ok(None);
                }
                State::Body(header) => {
                    let len = header.body_len as usize;
                    if src.len() < len {
                        reserve_body(src, len);
                        return Ok(None);
                    }
                    self.state = State::Header;
                    return Ok(Some(frame(header, src, len)));
                }
            }
        }
    }

    fn too_large(&self, h: Header, len: usize) -> Decoded {
        let max = self.max_payload;
        if h.is_request() {
            Decoded::Request(Request {
                id: h.id,
                two_way: h.is_two_way(),
                event: h.is_event(),
                serialization: h.serialization(),
                body: bytes::Bytes::new(),
                broken: Some(BrokenRequest::PayloadTooLarge { len, max }),
            })
        } else {
            Decoded::ResponseTooLarge {
                id: h.id,
                serialization: h.serialization(),
                event: h.is_event(),
                len,
                max,
            }
        }
    }
}

/// The least room made for a body still arriving.
const MIN_BODY_RESERVE: usize = 64 * 1024;

/// Makes room for more of a `len`-byte body, but never more than has arrived (at
/// least 64 KiB): the room grows with the bytes the peer really sends, so a header
/// that only declares a large length (up to the payload limit, or 2 GiB without one)
/// costs no more than its own bytes.
fn reserve_body(src: &mut BytesMut, len: usize) {
    let missing = len.saturating_sub(src.len());
    src.reserve(missing.min(src.len().max(MIN_BODY_RESERVE)));
}

fn frame(h: Header, src: &mut BytesMut, len: usize) -> Decoded {
    let body = src.split_to(len).freeze();
    if h.is_request() {
        Decoded::Request(Request {
            id: h.id,
            two_way: h.is_two_way(),
            event: h.is_event(),
            serialization: h.serialization(),
            body,
            broken: None,
        })
    } else {
        Decoded::Response(Response {
            id: h.id,
            status: Status::from(h.status),
            event: h.is_event(),
            serialization: h.serialization(),
            body,
        })
    }
}
