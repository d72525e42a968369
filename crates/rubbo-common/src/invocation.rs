//! `Invocation`: one call as it travels down the consumer chain or up the provider chain.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use crate::result::{Encoded, TypedValue};
use crate::stream::StreamSlot;
use crate::{Url, Value};

/// Call attachments (Dubbo's `RpcContext` attachments): string keys, dynamic values.
pub type Attachments = HashMap<String, Value>;

/// The arguments of a call, in one of three forms.
#[derive(Clone)]
pub enum Arguments {
    /// Dynamic values (generic calls, tools, tests).
    Values(Vec<Value>),
    /// Typed Rust arguments from a generated stub: `value` serializes as a tuple whose
    /// `count` elements are written as consecutive top-level values.
    Typed {
        /// How many arguments the tuple holds.
        count: usize,
        /// The tuple.
        value: TypedValue,
    },
    /// Arguments still in wire form (provider side), decoded lazily by the dispatcher,
    /// which knows their types.
    Encoded {
        /// How many values the bytes hold.
        count: usize,
        /// The bytes.
        encoded: Encoded,
    },
    /// A streaming call's requests: a stream of encoded messages (one message for a
    /// server-streaming call), taken once by the protocol invoker on the consumer or
    /// by the dispatcher on the provider.
    Stream(StreamSlot),
}

impl Arguments {
    /// No arguments.
    pub fn none() -> Self {
        Arguments::Values(Vec::new())
    }

    /// Typed arguments: a tuple of `count` serializable values.
    pub fn typed<T: serde::Serialize + Send + Sync + 'static>(count: usize, tuple: T) -> Self {
        Arguments::Typed {
            count,
            value: Arc::new(tuple),
        }
    }

    /// The number of arguments.
    pub fn len(&self) -> usize {
        match self {
            Arguments::Values(v) => v.len(),
            Arguments::Typed { count, .. } | Arguments::Encoded { count, .. } => *count,
            Arguments::Stream(_) => 1,
        }
    }

    /// Whether there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The request stream of a streaming call.
    pub fn as_stream(&self) -> Option<&StreamSlot> {
        match self {
            Arguments::Stream(s) => Some(s),
            _ => None,
        }
    }

    /// Whether this is a streaming call whose stream was taken (sent): such a call
    /// must not be retried, since its messages are gone.
    pub fn stream_started(&self) -> bool {
        matches!(self, Arguments::Stream(s) if s.is_taken())
    }

    /// The dynamic values, when the arguments are in that form.
    pub fn as_values(&self) -> Option<&[Value]> {
        match self {
            Arguments::Values(v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Debug for Arguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arguments::Values(v) => f.debug_tuple("Values").field(v).finish(),
            Arguments::Typed { count, .. } => write!(f, "Typed({count} args)"),
            Arguments::Encoded { count, encoded } => f
                .debug_tuple("Encoded")
                .field(count)
                .field(encoded)
                .finish(),
            Arguments::Stream(s) => f.debug_tuple("Stream").field(s).finish(),
        }
    }
}

impl From<Vec<Value>> for Arguments {
    fn from(v: Vec<Value>) -> Self {
        Arguments::Values(v)
    }
}

/// One call: which service and method, its JVM parameter descriptors, its arguments
/// and attachments, plus what the layers learn on the way (target provider, deadline).
///
/// Cheap to clone (shared strings and arguments), so cluster invokers clone it for
/// retries.
///
/// ```
/// use rubbo_common::{Invocation, Value};
///
/// let inv = Invocation::new("org.rubbo.interop.InteropService", "echo")
///     .with_version("1.0.0")
///     .with_parameter_types("Ljava/lang/String;")
///     .with_arguments(vec![Value::from("hi")])
///     .with_attachment("trace-id", "abc");
/// assert_eq!(inv.service_key(), "org.rubbo.interop.InteropService:1.0.0");
/// assert_eq!(inv.attachment_str("trace-id"), Some("abc"));
/// ```
#[derive(Clone, Debug)]
pub struct Invocation {
    interface: Arc<str>,
    group: Option<Arc<str>>,
    version: Option<Arc<str>>,
    method: Arc<str>,
    /// `None`: no descriptor (a call without parameters, or not yet set).
    parameter_types: Option<Arc<str>>,
    arguments: Arguments,
    attachments: Attachments,
    target: Option<Url>,
    deadline: Option<Instant>,
    /// Provider side: the consumer's address and the local address it called, shared
    /// by every call of one connection (kept out of line: an invocation is moved
    /// through every filter, so its size is paid at each).
    peer: Option<Arc<Peer>>,
}

/// The two ends of the connection a provider received a call on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// The consumer's address.
    pub remote: std::net::SocketAddr,
    /// The provider's local address the consumer reached.
    pub local: std::net::SocketAddr,
}

impl Invocation {
    /// A call of `method` on `interface` with no arguments.
    pub fn new(interface: impl Into<Arc<str>>, method: impl Into<Arc<str>>) -> Self {
        Invocation {
            interface: interface.into(),
            group: None,
            version: None,
            method: method.into(),
            parameter_types: None,
            arguments: Arguments::none(),
            attachments: Attachments::new(),
            target: None,
            deadline: None,
            peer: None,
        }
    }

    /// Sets the service group.
    pub fn with_group(mut self, group: impl Into<Arc<str>>) -> Self {
        let g = group.into();
        self.group = (!g.is_empty()).then_some(g);
        self
    }

    /// Sets the service version.
    pub fn with_version(mut self, version: impl Into<Arc<str>>) -> Self {
        let v = version.into();
        self.version = (!v.is_empty()).then_some(v);
        self
    }

    /// Sets the JVM parameter descriptors, concatenated (`Ljava/lang/String;I`).
    pub fn with_parameter_types(mut self, desc: impl Into<Arc<str>>) -> Self {
        self.parameter_types = Some(desc.into());
        self
    }

    /// Sets the arguments.
    pub fn with_arguments(mut self, args: impl Into<Arguments>) -> Self {
        self.arguments = args.into();
        self
    }

    /// Adds an attachment.
    pub fn with_attachment(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.attachments.insert(key.into(), value.into());
        self
    }

    /// The interface name.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The group, if any.
    pub fn group(&self) -> Option<&str> {
        self.group.as_deref()
    }

    /// The version, if any.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// `{group}/{interface}:{version}`.
    pub fn service_key(&self) -> String {
        crate::service_key(self.group(), &self.interface, self.version())
    }

    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The method name, shared (cheap to keep past the call).
    pub fn method_arc(&self) -> Arc<str> {
        self.method.clone()
    }

    /// The JVM parameter descriptors.
    pub fn parameter_types(&self) -> &str {
        self.parameter_types.as_deref().unwrap_or("")
    }

    /// The arguments.
    pub fn arguments(&self) -> &Arguments {
        &self.arguments
    }

    /// The arguments, mutable.
    pub fn arguments_mut(&mut self) -> &mut Arguments {
        &mut self.arguments
    }

    /// The attachments.
    pub fn attachments(&self) -> &Attachments {
        &self.attachments
    }

    /// The attachments, mutable (filters add to them).
    pub fn attachments_mut(&mut self) -> &mut Attachments {
        &mut self.attachments
    }

    /// An attachment as a string.
    pub fn attachment_str(&self, key: &str) -> Option<&str> {
        self.attachments.get(key).and_then(Value::as_str)
    }

    /// Sets an attachment.
    pub fn set_attachment(&mut self, key: impl Into<String>, value: impl Into<Value>) {
        self.attachments.insert(key.into(), value.into());
    }

    /// The provider URL chosen by load balancing, once chosen.
    pub fn target(&self) -> Option<&Url> {
        self.target.as_ref()
    }

    /// Records the chosen provider URL.
    pub fn set_target(&mut self, url: Url) {
        self.target = Some(url);
    }

    /// The deadline of the whole call, if one was set.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Sets the deadline of the whole call.
    pub fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = Some(deadline);
    }

    /// Provider side: the connection the call came in on, as the protocol set it.
    pub fn peer(&self) -> Option<Peer> {
        self.peer.as_deref().copied()
    }

    /// Records the connection the call came in on (protocols do, on the provider side,
    /// with one shared value per connection).
    pub fn set_peer(&mut self, peer: impl Into<Arc<Peer>>) {
        self.peer = Some(peer.into());
    }
}
