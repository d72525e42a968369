//! What a call returns: a value or a business exception, with attachments.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

use crate::invocation::Attachments;
use crate::serialization::Serialization;
use crate::stream::StreamSlot;
use crate::{RpcError, Value};

/// A value still in its wire form: the bytes of one or more serialized values,
/// decoded only when someone asks for them (zero-copy from the frame).
///
/// It names the [`Serialization`] its bytes are in as a `&'static` reference:
/// serializations are stateless codecs, so a static reference costs nothing per call
/// (copying it is copying a pointer), where an `Arc` would bump and drop a shared count
/// on every call, bouncing its cache line between the cores that handle them.
#[derive(Clone)]
pub struct Encoded {
    /// The serialization the bytes are in.
    pub serialization: &'static dyn Serialization,
    /// The serialized values, back to back.
    pub bytes: Bytes,
}

impl Encoded {
    /// `bytes` in `serialization`.
    pub fn new(serialization: &'static dyn Serialization, bytes: Bytes) -> Self {
        Encoded {
            serialization,
            bytes,
        }
    }
}

impl PartialEq for Encoded {
    fn eq(&self, other: &Self) -> bool {
        crate::serialization::same(self.serialization, other.serialization)
            && self.bytes == other.bytes
    }
}

impl fmt::Debug for Encoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoded")
            .field("serialization", &self.serialization.name())
            .field("len", &self.bytes.len())
            .finish()
    }
}

/// A serializable value of any Rust type, shared (cheap to clone for retries).
pub type TypedValue = Arc<dyn erased_serde::Serialize + Send + Sync>;

/// One value in one of three forms: dynamic, typed Rust, or still encoded.
#[derive(Clone)]
pub enum Payload {
    /// Java `null` / `void`.
    Null,
    /// A dynamic value (generic calls, tools).
    Value(Value),
    /// A Rust value from a generated stub or handler, serialized straight to the wire.
    Typed(TypedValue),
    /// Bytes as they came off the wire, decoded lazily.
    Encoded(Encoded),
    /// A streaming call's replies: a stream of encoded messages, taken once.
    Stream(StreamSlot),
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Payload::Null => f.write_str("Null"),
            Payload::Value(v) => f.debug_tuple("Value").field(v).finish(),
            Payload::Typed(_) => f.write_str("Typed(..)"),
            Payload::Encoded(e) => f.debug_tuple("Encoded").field(e).finish(),
            Payload::Stream(s) => f.debug_tuple("Stream").field(s).finish(),
        }
    }
}

impl Payload {
    /// A typed Rust value.
    pub fn typed<T: serde::Serialize + Send + Sync + 'static>(value: T) -> Self {
        Payload::Typed(Arc::new(value))
    }
}

/// A Java exception thrown by provider code, as data: its class and message, plus the
/// whole object as sent (stack trace, cause, custom fields) when it came off the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct BizException {
    /// The Java class name, e.g. `org.rubbo.interop.InteropException`.
    pub class: String,
    /// `getMessage()`: the `detailMessage` field.
    pub message: Option<String>,
    /// The whole Throwable object as decoded, or `Value::Null` when built locally.
    pub value: Value,
}

impl BizException {
    /// An exception of `class` with `message`.
    pub fn new(class: impl Into<String>, message: Option<String>) -> Self {
        BizException {
            class: class.into(),
            message,
            value: Value::Null,
        }
    }
}

/// The field of Java's `GenericException` naming the original exception's class.
pub const GENERIC_EXCEPTION_CLASS_FIELD: &str = "exceptionClass";
/// The field of Java's `GenericException` holding the original exception's message.
pub const GENERIC_EXCEPTION_MESSAGE_FIELD: &str = "exceptionMessage";

impl BizException {
    /// A Throwable as it came off the wire (`value`, decoded): its class and
    /// `detailMessage`, with a generic call's `GenericException` unwrapped
    /// ([`unwrap_generic`](Self::unwrap_generic)). Anything that is not an object
    /// counts as `java.lang.Throwable`.
    pub fn from_thrown(value: Value) -> Self {
        let java = rubbo_hessian2::JavaException::from_value(&value);
        let class = java
            .as_ref()
            .map(|j| j.class.clone())
            .or_else(|| match &value {
                Value::Object(o) => Some(o.class.to_string()),
                _ => None,
            })
            .unwrap_or_else(|| "java.lang.Throwable".to_owned());
        let message = java.and_then(|j| j.message);
        BizException {
            class,
            message,
            value,
        }
        .unwrap_generic()
    }

    /// The exception a generic call's `GenericException` carries (its
    /// `exceptionClass` and `exceptionMessage`, what `getExceptionClass()` gives a
    /// Java generic consumer), keeping the wrapper as the value; any other exception
    /// unchanged.
    pub fn unwrap_generic(self) -> Self {
        if !self.class.ends_with(".rpc.service.GenericException") {
            return self;
        }
        let Some(class) = self
            .value
            .field(GENERIC_EXCEPTION_CLASS_FIELD)
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
        else {
            return self;
        };
        let message = self
            .value
            .field(GENERIC_EXCEPTION_MESSAGE_FIELD)
            .and_then(Value::as_str)
            .map(str::to_owned);
        BizException {
            class: class.to_owned(),
            message,
            value: self.value,
        }
    }
}

impl fmt::Display for BizException {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.message {
            Some(m) => write!(f, "{}: {}", self.class, m),
            None => f.write_str(&self.class),
        }
    }
}

/// The outcome of a call that reached the provider and came back.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The method returned (possibly `Payload::Null` for `void` / `null`).
    Value(Payload),
    /// The method threw.
    Exception(BizException),
}

/// What an [`Invoker`](crate::Invoker) returns on success: a value or a business
/// exception, with the response attachments.
///
/// ```
/// use rubbo_common::{Payload, RpcResult, Value};
///
/// let r = RpcResult::value(Payload::Value(Value::from("hi"))).with_attachment("k", "v");
/// assert!(r.exception().is_none());
/// assert_eq!(r.attachments().get("k").and_then(Value::as_str), Some("v"));
/// ```
#[derive(Debug, Clone)]
pub struct RpcResult {
    outcome: Outcome,
    attachments: Attachments,
    /// Boxed and absent until used: the dubbo protocol never has them, and every
    /// result is built, moved and dropped on the call path.
    header_attachments: Option<Box<Attachments>>,
}

impl RpcResult {
    /// A returned value.
    pub fn value(payload: Payload) -> Self {
        RpcResult {
            outcome: Outcome::Value(payload),
            attachments: Attachments::new(),
            header_attachments: None,
        }
    }

    /// `null` / `void`.
    pub fn null() -> Self {
        Self::value(Payload::Null)
    }

    /// A thrown business exception.
    pub fn from_exception(exception: BizException) -> Self {
        RpcResult {
            outcome: Outcome::Exception(exception),
            attachments: Attachments::new(),
            header_attachments: None,
        }
    }

    /// Adds a response attachment (builder style).
    pub fn with_attachment(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.attachments.insert(key.into(), value.into());
        self
    }

    /// The outcome.
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// The business exception, if the method threw.
    pub fn exception(&self) -> Option<&BizException> {
        match &self.outcome {
            Outcome::Exception(e) => Some(e),
            Outcome::Value(_) => None,
        }
    }

    /// The returned payload, if the method returned.
    pub fn payload(&self) -> Option<&Payload> {
        match &self.outcome {
            Outcome::Value(p) => Some(p),
            Outcome::Exception(_) => None,
        }
    }

    /// Response attachments.
    pub fn attachments(&self) -> &Attachments {
        &self.attachments
    }

    /// Response attachments, mutable.
    pub fn attachments_mut(&mut self) -> &mut Attachments {
        &mut self.attachments
    }

    /// Response attachments that travel in the response *headers* where the protocol
    /// has them (Triple: the HEADERS frame before the reply message, gRPC's initial
    /// metadata), apart from [`attachments`](Self::attachments), which Triple sends in
    /// the trailers. On a consumer, what the provider sent in its response headers.
    ///
    /// The dubbo protocol has no response headers: it does not send these. Splitting
    /// a result with [`into_parts`](Self::into_parts) drops them.
    ///
    /// ```
    /// use rubbo_common::{RpcResult, Value};
    ///
    /// let mut r = RpcResult::null().with_attachment("in-trailers", "t");
    /// r.header_attachments_mut().insert("in-headers".into(), Value::from("h"));
    /// assert!(r.header_attachments().contains_key("in-headers"));
    /// assert!(!r.attachments().contains_key("in-headers"));
    /// ```
    pub fn header_attachments(&self) -> &Attachments {
        static NONE: std::sync::LazyLock<Attachments> = std::sync::LazyLock::new(Attachments::new);
        self.header_attachments.as_deref().unwrap_or(&NONE)
    }

    /// Response header attachments, mutable (see
    /// [`header_attachments`](Self::header_attachments)).
    pub fn header_attachments_mut(&mut self) -> &mut Attachments {
        self.header_attachments.get_or_insert_with(Box::default)
    }

    /// Takes the response header attachments out (empty when there were none),
    /// without allocating when there were none.
    pub fn take_header_attachments(&mut self) -> Attachments {
        self.header_attachments
            .take()
            .map(|b| *b)
            .unwrap_or_default()
    }

    /// Splits into outcome and attachments (the header attachments are dropped).
    pub fn into_parts(self) -> (Outcome, Attachments) {
        (self.outcome, self.attachments)
    }

    /// Builds from parts.
    pub fn from_parts(outcome: Outcome, attachments: Attachments) -> Self {
        RpcResult {
            outcome,
            attachments,
            header_attachments: None,
        }
    }

    /// The payload, turning a business exception into an [`RpcError`] of kind `Biz`.
    pub fn into_payload(self) -> Result<Payload, RpcError> {
        match self.outcome {
            Outcome::Value(p) => Ok(p),
            Outcome::Exception(e) => Err(RpcError::from_biz(e)),
        }
    }
}
