//! The errors of this crate's codecs (framing, wrapper messages), before they become
//! a gRPC status or an [`RpcError`](rubbo_common::RpcError).

/// A message that could not be framed, unframed or unwrapped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TripleError {
    /// The body held no message.
    #[error("the body holds no gRPC message")]
    MissingMessage,
    /// The body ended inside a message.
    #[error("truncated gRPC message: {have} bytes, {need} needed")]
    Truncated {
        /// Bytes received.
        have: usize,
        /// Bytes the prefix announced.
        need: usize,
    },
    /// Flag bits 1-7 were set.
    #[error("bad gRPC message flags {0:#04x} (only bit 0, compressed, is defined)")]
    BadFlags(u8),
    /// The compressed flag was set, but the call's `grpc-encoding` is identity (or
    /// absent).
    #[error("compressed gRPC message, but the call's grpc-encoding is identity")]
    Compressed,
    /// `dubbo.rpc.tri.compressor` names no known compressor.
    #[error(
        "dubbo.rpc.tri.compressor={0:?} is not a known compressor (identity, bzip2,gzip,snappy)"
    )]
    UnknownCompressor(String),
    /// A message did not compress.
    #[error("cannot compress the message: {0}")]
    Compression(String),
    /// A compressed message did not decompress.
    #[error("cannot decompress the {encoding} message: {reason}")]
    Decompression {
        /// The `grpc-encoding`.
        encoding: &'static str,
        /// Why.
        reason: String,
    },
    /// The message is larger than allowed.
    #[error("gRPC message of {len} bytes exceeds the limit of {max} bytes (payload)")]
    TooLarge {
        /// The announced length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A unary body held more than one message.
    #[error("more than one gRPC message in a unary call")]
    ExtraMessages,
    /// The message is not a Triple wrapper message.
    #[error(
        "not a {message}: this method is served in wrapper mode (a Java-interface service, \
         hessian2 inside org.apache.dubbo.triple.{message}), so a plain protobuf message \
         cannot call it ({reason})"
    )]
    NotWrapper {
        /// `TripleRequestWrapper` or `TripleResponseWrapper`.
        message: &'static str,
        /// What did not fit.
        reason: String,
    },
    /// The wrapper names a serialization Rubbo does not speak.
    #[error("serialization {0:?} is not supported (hessian2, sent as \"hessian4\", is)")]
    Serialization(String),
    /// A value did not encode or decode.
    #[error("hessian2: {0}")]
    Hessian(#[from] rubbo_hessian2::Error),
}
