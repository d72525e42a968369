//! The crate's error type.

use std::fmt::Display;

/// Everything that can go wrong while encoding or decoding Hessian 2.
///
/// Decoding errors carry the byte offset (from the start of the decoder's
/// input) where the problem was found and what was expected there.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input ended in the middle of a value.
    #[error("unexpected end of input at byte {offset}: expected {expected}")]
    UnexpectedEof {
        /// Offset where more bytes were needed.
        offset: usize,
        /// What was being read.
        expected: &'static str,
    },
    /// A tag byte that cannot start what was expected here.
    #[error("unexpected tag 0x{tag:02x} at byte {offset}: expected {expected}")]
    UnexpectedTag {
        /// Offset of the tag.
        offset: usize,
        /// The tag byte found.
        tag: u8,
        /// What was expected.
        expected: &'static str,
    },
    /// A length that is negative or larger than the bytes left.
    #[error("invalid length {len} at byte {offset}: {reason}")]
    InvalidLength {
        /// Offset of the length.
        offset: usize,
        /// The length found.
        len: i64,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// A string whose bytes are not valid (CESU-8 / UTF-8) characters.
    #[error("invalid utf-8 in string at byte {offset}")]
    InvalidUtf8 {
        /// Offset of the bad byte.
        offset: usize,
    },
    /// A class, type or object reference that points nowhere.
    #[error("invalid {kind} reference {index} at byte {offset}")]
    InvalidRef {
        /// Offset of the reference.
        offset: usize,
        /// Which table: `class`, `type` or `object`.
        kind: &'static str,
        /// The index found.
        index: i64,
    },
    /// Nesting deeper than the configured limit.
    #[error("nesting deeper than {limit} at byte {offset}")]
    DepthLimit {
        /// Offset where the limit was crossed.
        offset: usize,
        /// The limit.
        limit: usize,
    },
    /// Bytes left over after the last expected value.
    #[error("trailing bytes at byte {offset}")]
    TrailingBytes {
        /// Offset of the first unread byte.
        offset: usize,
    },
    /// A value that Hessian (or Java) cannot represent.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// A message from serde (a missing field, a wrong type...), with the offset
    /// of the value being decoded when it is known.
    #[error("{msg}{}", offset.map(|o| format!(" (at byte {o})")).unwrap_or_default())]
    Message {
        /// The message.
        msg: String,
        /// Offset of the value being decoded, if any.
        offset: Option<usize>,
    },
    /// Internal signal: a struct's class definition must be written first.
    /// Never returned to callers.
    #[doc(hidden)]
    #[error("internal: class definition needed")]
    NeedClassDef,
    /// Internal signal: a struct's fields differ from the class definition
    /// chosen for its name. Never returned to callers.
    #[doc(hidden)]
    #[error("internal: class definition mismatch")]
    ClassMismatch,
}

impl Error {
    /// The byte offset of a decoding error, when known.
    pub fn offset(&self) -> Option<usize> {
        match self {
            Error::UnexpectedEof { offset, .. }
            | Error::UnexpectedTag { offset, .. }
            | Error::InvalidLength { offset, .. }
            | Error::InvalidUtf8 { offset }
            | Error::InvalidRef { offset, .. }
            | Error::DepthLimit { offset, .. }
            | Error::TrailingBytes { offset } => Some(*offset),
            Error::Message { offset, .. } => *offset,
            _ => None,
        }
    }

    pub(crate) fn with_offset(self, at: usize) -> Self {
        match self {
            Error::Message { msg, offset: None } => Error::Message {
                msg,
                offset: Some(at),
            },
            e => e,
        }
    }
}

impl serde::ser::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error::Message {
            msg: msg.to_string(),
            offset: None,
        }
    }
}

impl serde::de::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error::Message {
            msg: msg.to_string(),
            offset: None,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
