//! Wire statuses and remoting errors mapped to [`RpcError`] kinds, in one place.

use rubbo_common::{ErrorKind, RpcError};
use rubbo_remoting::{RemotingError, Status};

/// The error a consumer reports for a non-OK response with `status` and `text`.
///
/// Java providers report a missing service, method or descriptor as status 40
/// ("Fail to decode request ... RpcInvocation [methodName=...]") or 70 ("Not found
/// exported service"); Rubbo providers use 60 for both. All three map to
/// [`ErrorKind::MethodNotFound`]; any other status 40 is
/// [`ErrorKind::Serialization`].
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
        // The provider could not read the request (arguments of the wrong types, a
        // malformed body): every provider would answer the same, so not retryable.
        Status::BAD_REQUEST => ErrorKind::Serialization,
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
///
/// A call refused by the connection's bound of pending calls
/// ([`RemotingError::Limit`]) is [`ErrorKind::LimitExceeded`], like a provider's
/// "thread pool is exhausted" (status 100): retryable, so failover tries another
/// provider, as Java's failover retries any non-business `RpcException`.
pub fn error_for_remoting(e: RemotingError) -> RpcError {
    let kind = if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_limit() {
        ErrorKind::LimitExceeded
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_kinds_a_cluster_can_act_on() {
        let kind = |status, text: &str| error_for_status(status, text.to_owned()).kind();
        assert_eq!(kind(Status::SERVER_TIMEOUT, "slow"), ErrorKind::Timeout);
        assert_eq!(
            kind(
                Status::BAD_REQUEST,
                "Fail to decode request due to: RpcInvocation [methodName=nope]"
            ),
            ErrorKind::MethodNotFound
        );
        let wrong_types = error_for_status(
            Status::BAD_REQUEST,
            "Fail to decode request due to: java.lang.ClassCastException".to_owned(),
        );
        assert_eq!(wrong_types.kind(), ErrorKind::Serialization);
        assert!(
            !wrong_types.is_retryable(),
            "every provider would refuse it"
        );
        assert_eq!(
            kind(Status::SERVER_THREADPOOL_EXHAUSTED_ERROR, "full"),
            ErrorKind::LimitExceeded
        );
        assert_eq!(kind(Status::SERVICE_ERROR, "boom"), ErrorKind::Unknown);
    }

    #[test]
    fn a_refused_call_is_a_retryable_limit() {
        let e = error_for_remoting(RemotingError::Limit {
            addr: "a:1".into(),
            pending: 8,
            max: 8,
        });
        assert_eq!(e.kind(), ErrorKind::LimitExceeded);
        assert!(e.is_retryable(), "failover tries another provider");
    }
}
