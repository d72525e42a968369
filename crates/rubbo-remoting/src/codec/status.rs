//! The response status byte.

use std::fmt;

/// The status byte of a Dubbo response (header offset 3).
///
/// A newtype over the raw byte: every value read from the wire is preserved, known
/// codes have associated constants and a [`name`](Status::name).
///
/// ```
/// use rubbo_remoting::Status;
/// assert_eq!(Status::from(20), Status::OK);
/// assert_eq!(Status::SERVER_ERROR.as_u8(), 80);
/// assert_eq!(Status::from(123).name(), None); // unknown values survive
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Status(u8);

impl Status {
    /// 20: result or heartbeat reply.
    pub const OK: Status = Status(20);
    /// 25: the provider's encoded response exceeded the payload limit.
    pub const SERIALIZATION_ERROR: Status = Status(25);
    /// 30: consumer-local, the request was not sent before the timeout.
    pub const CLIENT_TIMEOUT: Status = Status(30);
    /// 31: consumer-local, the request was sent but no reply came before the timeout.
    pub const SERVER_TIMEOUT: Status = Status(31);
    /// 35: consumer-local, the channel closed with calls pending.
    pub const CHANNEL_INACTIVE: Status = Status(35);
    /// 40: the provider could not decode the request.
    pub const BAD_REQUEST: Status = Status(40);
    /// 50: the provider could not encode the response.
    pub const BAD_RESPONSE: Status = Status(50);
    /// 60: defined by Dubbo, never emitted by Java 3.3.
    pub const SERVICE_NOT_FOUND: Status = Status(60);
    /// 70: the service threw.
    pub const SERVICE_ERROR: Status = Status(70);
    /// 80: dispatch failure on the provider.
    pub const SERVER_ERROR: Status = Status(80);
    /// 90: consumer-local, response decode failure or over-payload.
    pub const CLIENT_ERROR: Status = Status(90);
    /// 100: the provider's thread pool rejected a two-way request.
    pub const SERVER_THREADPOOL_EXHAUSTED_ERROR: Status = Status(100);

    /// Wraps a raw status byte.
    pub const fn from_u8(v: u8) -> Self {
        Status(v)
    }

    /// The raw status byte.
    pub const fn as_u8(self) -> u8 {
        self.0
    }

    /// `true` for [`Status::OK`].
    pub const fn is_ok(self) -> bool {
        self.0 == 20
    }

    /// The Java constant name of a known code, `None` for unknown values.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            20 => "OK",
            25 => "SERIALIZATION_ERROR",
            30 => "CLIENT_TIMEOUT",
            31 => "SERVER_TIMEOUT",
            35 => "CHANNEL_INACTIVE",
            40 => "BAD_REQUEST",
            50 => "BAD_RESPONSE",
            60 => "SERVICE_NOT_FOUND",
            70 => "SERVICE_ERROR",
            80 => "SERVER_ERROR",
            90 => "CLIENT_ERROR",
            100 => "SERVER_THREADPOOL_EXHAUSTED_ERROR",
            _ => return None,
        })
    }
}

impl From<u8> for Status {
    fn from(v: u8) -> Self {
        Status(v)
    }
}

impl From<Status> for u8 {
    fn from(s: Status) -> Self {
        s.0
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n}({})", self.0),
            None => write!(f, "Status({})", self.0),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_codes_named_and_unknown_preserved() {
        let known = [20u8, 25, 30, 31, 35, 40, 50, 60, 70, 80, 90, 100];
        for k in known {
            assert!(Status::from(k).name().is_some(), "{k}");
        }
        for v in 0..=255u8 {
            assert_eq!(u8::from(Status::from(v)), v);
            if !known.contains(&v) {
                assert_eq!(Status::from(v).name(), None);
            }
        }
        assert_eq!(format!("{:?}", Status::BAD_REQUEST), "BAD_REQUEST(40)");
        assert_eq!(format!("{}", Status::from(7)), "Status(7)");
    }
}
