//! Frame encoding into a caller-owned (reused) buffer.

use bytes::BytesMut;

use super::header::HEADER_LEN;
use super::message::Frame;

/// Appends header and body of `frame` to `dst`.
///
/// ```
/// use bytes::BytesMut;
/// use rubbo_remoting::{Frame, Request, encode_frame};
/// let mut buf = BytesMut::new();
/// encode_frame(&Frame::Request(Request::heartbeat(7)), &mut buf);
/// assert_eq!(&buf[..], &[0xda, 0xbb, 0xe2, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0x4e]);
/// ```
pub fn encode_frame(frame: &Frame, dst: &mut BytesMut) {
    let body = frame.body();
    dst.reserve(HEADER_LEN + body.len());
    frame.header().encode(dst);
    dst.extend_from_slice(body);
}
