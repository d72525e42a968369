//! Wire statuses and remoting errors mapped to [`RpcError`] kinds, in one place.

use rubbo_common::{ErrorKind, RpcError};
use rubbo_remoting::{RemotingError, Status};

/// The error a consumer reports for a non-OK response with `status` and `text`.
///
/// Java providers report a missing service, method or descriptor as status 40
/// ("Fail to decode request ... RpcInvocation [methodName=...]") or 70 ("Not found
/// exported service"); Rubbo providers use 60 for both. All three map to
/// [`ErrorKind::MethodNotFound`].
pub fn error_for_status(status: Status, text: String) -> RpcError {
    let kind = match status {
        Status::CLIENT_TIMEOUT | Status::SERVER_TIMEOUT => ErrorKind::Timeout,
        Status::CHANNEL_INACTIVE => ErrorKind::Network,
        Status::SERIALIZATION_ERROR | Status::BAD_RESPONSE | Status::CLIENT_ERROR => {
            ErrorKind::Serialization
        }
        Status::SERVICE_NOT_FOUND => ErrorKind::MethodNotFound,
        Status::BAD_REQUEST if text.contains("RpcInvocation [methodName=") => {
            ErrorKind::MethodNotFound
        }
        Status::SERVICE_ERROR if text.contains("Not found exported service") => {
            ErrorKind::MethodNotFound
        }
        Status::SERVER_THREADPOOL_EXHAUSTED_ERROR => ErrorKind::LimitExceeded,
        _ => ErrorKind::Unknown,
    };
    let name = status.name().unwrap_or("UNKNOWN");
    RpcError::new(kind, format!("status {} {name}: {text}", status.as_u8()))
}

/// The error a consumer reports for a failed exchange.
pub fn error_for_remoting(e: RemotingError) -> RpcError {
    let kind = if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_network() {
        ErrorKind::Network
    } else if matches!(e, RemotingError::PayloadTooLarge { .. }) {
        ErrorKind::Serialization
    } else {
        ErrorKind::Unknown
    };
    RpcError::new(kind, e.to_string()).with_source(e)
}

/// The status a provider answers for an error raised before or instead of the
/// service's own outcome.
pub fn status_for_error(e: &RpcError) -> Status {
    match e.kind() {
        ErrorKind::MethodNotFound => Status::SERVICE_NOT_FOUND,
        ErrorKind::LimitExceeded => Status::SERVER_THREADPOOL_EXHAUSTED_ERROR,
        ErrorKind::Serialization => Status::BAD_REQUEST,
        ErrorKind::Timeout => Status::SERVER_TIMEOUT,
        _ => Status::SERVICE_ERROR,
    }
}
