//! The Dubbo frame: header, status, messages, decoder and encoder.

mod decoder;
mod encoder;
pub(crate) mod event;
mod header;
mod message;
mod status;

pub use decoder::{DecodeError, Decoded, Decoder};
pub use encoder::encode_frame;
pub use event::{
    ErrorBodyFn, HESSIAN2_NULL, MAX_EVENT_BODY, READONLY_EVENT_BODY, WRITABLE_EVENT_BODY,
    hessian2_error_body,
};
pub use header::{
    FLAG_EVENT, FLAG_REQUEST, FLAG_TWOWAY, HEADER_LEN, HESSIAN2, Header, MAGIC, SERIALIZATION_MASK,
};
pub use message::{BrokenRequest, Frame, Request, Response};
pub use status::Status;

#[cfg(test)]
mod tests;
