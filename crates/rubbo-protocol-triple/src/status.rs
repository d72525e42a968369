//! gRPC status codes and their mapping to [`RpcError`] kinds, both ways, in one place;
//! plus the `grpc-message` percent-encoding and the `grpc-timeout` header format.
//!
//! Java's tables are in `TriRpcStatus.java` (`dubboCodeToTriCode`,
//! `triCodeToDubboCode`, `httpStatusToGrpcCode`); the differences are noted where
//! they are.

use std::fmt;
use std::time::Duration;

use rubbo_common::{ErrorKind, RpcError};

/// A gRPC status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// 0: success.
    Ok,
    /// 1: the call was cancelled.
    Cancelled,
    /// 2: anything else.
    Unknown,
    /// 3: the client sent a bad argument.
    InvalidArgument,
    /// 4: the deadline passed.
    DeadlineExceeded,
    /// 5: something was not found.
    NotFound,
    /// 6: it exists already.
    AlreadyExists,
    /// 7: not allowed.
    PermissionDenied,
    /// 8: a limit was hit.
    ResourceExhausted,
    /// 9: the system is not in the state the call needs.
    FailedPrecondition,
    /// 10: aborted.
    Aborted,
    /// 11: out of range.
    OutOfRange,
    /// 12: no such service or method, or an unsupported feature.
    Unimplemented,
    /// 13: an internal error (a message that does not decode...).
    Internal,
    /// 14: the service is not available now.
    Unavailable,
    /// 15: data was lost.
    DataLoss,
    /// 16: the caller is not authenticated.
    Unauthenticated,
}

impl Code {
    /// The code of a `grpc-status` value; unknown numbers are [`Code::Unknown`].
    pub fn from_i32(code: i32) -> Code {
        match code {
            0 => Code::Ok,
            1 => Code::Cancelled,
            3 => Code::InvalidArgument,
            4 => Code::DeadlineExceeded,
            5 => Code::NotFound,
            6 => Code::AlreadyExists,
            7 => Code::PermissionDenied,
            8 => Code::ResourceExhausted,
            9 => Code::FailedPrecondition,
            10 => Code::Aborted,
            11 => Code::OutOfRange,
            12 => Code::Unimplemented,
            13 => Code::Internal,
            14 => Code::Unavailable,
            15 => Code::DataLoss,
            16 => Code::Unauthenticated,
            _ => Code::Unknown,
        }
    }

    /// The number sent in `grpc-status`.
    pub fn as_i32(self) -> i32 {
        match self {
            Code::Ok => 0,
            Code::Cancelled => 1,
            Code::Unknown => 2,
            Code::InvalidArgument => 3,
            Code::DeadlineExceeded => 4,
            Code::NotFound => 5,
            Code::AlreadyExists => 6,
            Code::PermissionDenied => 7,
            Code::ResourceExhausted => 8,
            Code::FailedPrecondition => 9,
            Code::Aborted => 10,
            Code::OutOfRange => 11,
            Code::Unimplemented => 12,
            Code::Internal => 13,
            Code::Unavailable => 14,
            Code::DataLoss => 15,
            Code::Unauthenticated => 16,
        }
    }

    /// The code a client infers from an HTTP status when the response has no
    /// `grpc-status` (Java's `httpStatusToGrpcCode`, the gRPC spec's table).
    pub fn from_http(status: u16) -> Code {
        match status {
            100..=199 | 400 | 431 => Code::Internal,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            429 | 502 | 503 | 504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}({})", self.as_i32())
    }
}

/// A gRPC status: a code and a message, what an IDL (protobuf) method fails with and
/// what reaches the peer as `grpc-status` and `grpc-message` (Java's
/// `StatusRpcException`, tonic's `Status`).
///
/// It travels through filters and clusters inside an [`RpcError`] (as its
/// [`source`](std::error::Error::source)), so the code survives: the server answers it,
/// and the consumer's error carries the code and message it received.
///
/// ```
/// use rubbo_common::RpcError;
/// use rubbo_protocol_triple::{Code, Status};
///
/// let e = RpcError::from(Status::invalid_argument("bad name"));
/// let back = Status::from_error(&e);
/// assert_eq!((back.code(), back.message()), (Code::InvalidArgument, "bad name"));
/// // Any other error has the code its kind maps to.
/// assert_eq!(Status::from_error(&RpcError::timeout("slow")).code(), Code::DeadlineExceeded);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("grpc-status {code}: {message}")]
pub struct Status {
    code: Code,
    message: String,
}

impl Status {
    /// A status with `code` and `message`.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Status {
            code,
            message: message.into(),
        }
    }

    /// `INVALID_ARGUMENT` (3).
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(Code::InvalidArgument, message)
    }

    /// `NOT_FOUND` (5).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(Code::NotFound, message)
    }

    /// `UNIMPLEMENTED` (12).
    pub fn unimplemented(message: impl Into<String>) -> Self {
        Self::new(Code::Unimplemented, message)
    }

    /// `INTERNAL` (13).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Code::Internal, message)
    }

    /// `UNKNOWN` (2).
    pub fn unknown(message: impl Into<String>) -> Self {
        Self::new(Code::Unknown, message)
    }

    /// The code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The message (`grpc-message`, decoded).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The status an error stands for: the status it carries, or the code of its kind
    /// ([`code_for_error`]) and its message.
    pub fn from_error(e: &RpcError) -> Status {
        match carried(e) {
            Some(s) => s.clone(),
            None => Status::new(code_for_error(e), e.message()),
        }
    }
}

/// The status `e` carries, if it was made from one.
fn carried(e: &RpcError) -> Option<&Status> {
    std::error::Error::source(e).and_then(|s| s.downcast_ref::<Status>())
}

impl From<Status> for RpcError {
    /// An error of the kind the consumer maps the code to ([`error_for_status`]),
    /// carrying the status.
    fn from(s: Status) -> RpcError {
        error_for_status(s.code, &s.message)
    }
}

impl From<RpcError> for Status {
    fn from(e: RpcError) -> Status {
        Status::from_error(&e)
    }
}

/// The message a provider sends in `grpc-message` for `e`: the carried status's
/// message, or the error's.
pub fn message_for_error(e: &RpcError) -> &str {
    match carried(e) {
        Some(s) => s.message(),
        None => e.message(),
    }
}

/// The code a provider answers for an error raised before or instead of the service's
/// own outcome (Java's `dubboCodeToTriCode`); an error carrying a [`Status`] answers
/// its code.
///
/// One difference: a missing method is [`Code::Unimplemented`] (what gRPC peers
/// expect and what Java answers for a missing service), where Java maps its
/// `METHOD_NOT_FOUND` code to `NOT_FOUND`.
pub fn code_for_error(e: &RpcError) -> Code {
    if let Some(s) = carried(e) {
        return s.code;
    }
    match e.kind() {
        ErrorKind::Timeout => Code::DeadlineExceeded,
        ErrorKind::Forbidden => Code::PermissionDenied,
        ErrorKind::Authorization => Code::Unauthenticated,
        ErrorKind::Network | ErrorKind::LimitExceeded => Code::Unavailable,
        ErrorKind::MethodNotFound => Code::Unimplemented,
        ErrorKind::Serialization => Code::Internal,
        _ => Code::Unknown,
    }
}

/// The error a consumer reports for a non-OK `grpc-status` (Java's
/// `triCodeToDubboCode`, plus `UNAUTHENTICATED` as an authorization error and
/// `RESOURCE_EXHAUSTED` as a limit). It carries the [`Status`] received.
pub fn error_for_status(code: Code, message: &str) -> RpcError {
    let kind = match code {
        Code::DeadlineExceeded => ErrorKind::Timeout,
        Code::PermissionDenied => ErrorKind::Forbidden,
        Code::Unauthenticated => ErrorKind::Authorization,
        Code::Unavailable => ErrorKind::Network,
        Code::ResourceExhausted => ErrorKind::LimitExceeded,
        Code::Unimplemented => ErrorKind::MethodNotFound,
        _ => ErrorKind::Unknown,
    };
    RpcError::new(kind, format!("grpc-status {code}: {message}"))
        .with_source(Status::new(code, message))
}

/// Refuses a message of `len` bytes that a peer would refuse: over `max` (the
/// `payload` key; 0 or less: no limit), it is not sent, and the call (or stream) fails
/// with `RESOURCE_EXHAUSTED`, as gRPC does. The error is a serialization error (no
/// retry makes the message smaller) carrying that status; its text keeps the dubbo
/// protocol's `Data length too large`.
pub(crate) fn check_outgoing(len: usize, max: i64, what: &str) -> Result<(), RpcError> {
    if max <= 0 || len as u64 <= max as u64 {
        return Ok(());
    }
    let message = format!(
        "Data length too large: {len}, max payload: {max}; the {what} message was not sent"
    );
    Err(RpcError::new(ErrorKind::Serialization, message.clone())
        .with_source(Status::new(Code::ResourceExhausted, message)))
}

/// The value of `tri-exception-code` for a business exception: the gRPC code, except
/// `UNKNOWN`, sent as Dubbo's `BIZ_EXCEPTION` (3), as Java's
/// `ExceptionCustomizerWrapper` does.
pub const BIZ_EXCEPTION_CODE: &str = "3";

/// Percent-encodes a `grpc-message` (the gRPC spec: bytes outside printable ASCII
/// and `%` are encoded). `+` is encoded too, because Java clients decode it as a
/// space.
pub fn encode_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for &b in message.as_bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' && b != b'+' {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
    out
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Decodes a `grpc-message` leniently: `%XX` sequences become bytes, anything else
/// (a raw message, as Java 3.3 servers send) is kept; invalid UTF-8 is replaced.
pub fn decode_message(raw: &[u8]) -> String {
    let hex = |c: u8| char::from(c).to_digit(16);
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            if let (Some(h), Some(l)) = (
                raw.get(i + 1).and_then(|c| hex(*c)),
                raw.get(i + 2).and_then(|c| hex(*c)),
            ) {
                // Two hex digits are at most 0xff.
                out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                i += 3;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Formats a `grpc-timeout` value: at most 8 digits and a unit, milliseconds when
/// they fit (`3000m`), rounded up so the peer never sees less time than is left.
pub fn format_timeout(timeout: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let ms = timeout.as_nanos().div_ceil(1_000_000);
    if ms <= MAX {
        return format!("{ms}m");
    }
    let s = timeout.as_nanos().div_ceil(1_000_000_000);
    if s <= MAX {
        return format!("{s}S");
    }
    format!("{}H", (s.div_ceil(3600)).min(MAX))
}

/// Parses a `grpc-timeout` value (`{1-8 digits}{n|u|m|S|M|H}`); `None` when malformed.
pub fn parse_timeout(raw: &str) -> Option<Duration> {
    let raw = raw.trim();
    if raw.len() < 2 || raw.len() > 9 {
        return None;
    }
    let (digits, unit) = raw.split_at(raw.len() - 1);
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "n" => Duration::from_nanos(n),
        "u" => Duration::from_micros(n),
        "m" => Duration::from_millis(n),
        "S" => Duration::from_secs(n),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_map_to_kinds_a_cluster_can_act_on() {
        for n in 0..=16 {
            assert_eq!(Code::from_i32(n).as_i32(), n);
        }
        assert_eq!(Code::from_i32(99), Code::Unknown);
        let kind = |c| error_for_status(c, "x").kind();
        assert_eq!(kind(Code::DeadlineExceeded), ErrorKind::Timeout);
        assert_eq!(kind(Code::Unavailable), ErrorKind::Network);
        assert_eq!(kind(Code::Unimplemented), ErrorKind::MethodNotFound);
        assert_eq!(kind(Code::PermissionDenied), ErrorKind::Forbidden);
        assert_eq!(kind(Code::Internal), ErrorKind::Unknown);
        assert!(error_for_status(Code::Unavailable, "x").is_retryable());
        assert_eq!(
            code_for_error(&RpcError::timeout("t")),
            Code::DeadlineExceeded
        );
        assert_eq!(
            code_for_error(&RpcError::method_not_found("m")),
            Code::Unimplemented
        );
        assert_eq!(
            code_for_error(&RpcError::serialization("s")),
            Code::Internal
        );
        assert_eq!(
            code_for_error(&RpcError::new(ErrorKind::LimitExceeded, "l")),
            Code::Unavailable
        );
        assert_eq!(code_for_error(&RpcError::network("n")), Code::Unavailable);
        assert_eq!(Code::from_http(404), Code::Unimplemented);
        assert_eq!(Code::from_http(503), Code::Unavailable);
        assert_eq!(Code::from_http(500), Code::Unknown);
    }

    #[test]
    fn a_status_survives_inside_an_error_both_ways() {
        let e = RpcError::from(Status::invalid_argument("bad name"));
        assert_eq!(e.kind(), ErrorKind::Unknown);
        assert_eq!(code_for_error(&e), Code::InvalidArgument);
        assert_eq!(message_for_error(&e), "bad name");
        // What a consumer gets for a received status carries it too.
        let got = error_for_status(Code::NotFound, "no such user");
        assert_eq!(
            Status::from_error(&got),
            Status::new(Code::NotFound, "no such user")
        );
        assert_eq!(message_for_error(&RpcError::timeout("slow")), "slow");
    }

    #[test]
    fn messages_percent_encode_and_decode_leniently() {
        let m = "bad name: 100% ünïcode + more\nline";
        let enc = encode_message(m);
        assert!(enc.is_ascii() && !enc.contains('\n') && !enc.contains('+'));
        assert_eq!(decode_message(enc.as_bytes()), m);
        // Raw text (Java 3.3 servers do not encode) and broken escapes pass through.
        assert_eq!(decode_message(b"plain text 50%"), "plain text 50%");
        assert_eq!(decode_message(b"%zz%4"), "%zz%4");
        assert_eq!(decode_message(b"a%20b"), "a b");
    }

    #[test]
    fn timeouts_use_every_unit_and_round_up() {
        assert_eq!(parse_timeout("10000000u"), Some(Duration::from_secs(10)));
        assert_eq!(parse_timeout("3000m"), Some(Duration::from_secs(3)));
        assert_eq!(parse_timeout("5S"), Some(Duration::from_secs(5)));
        assert_eq!(parse_timeout("2M"), Some(Duration::from_secs(120)));
        assert_eq!(parse_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_timeout("7n"), Some(Duration::from_nanos(7)));
        for bad in ["", "m", "123456789m", "12x", "-1m", "1.5S"] {
            assert_eq!(parse_timeout(bad), None, "{bad}");
        }
        assert_eq!(format_timeout(Duration::from_micros(1500)), "2m");
        assert_eq!(format_timeout(Duration::from_secs(3)), "3000m");
        assert_eq!(format_timeout(Duration::from_secs(200_000)), "200000S");
        let long = format_timeout(Duration::from_secs(u64::MAX / 4));
        assert!(long.ends_with('H') && long.len() <= 9, "{long}");
    }
}
