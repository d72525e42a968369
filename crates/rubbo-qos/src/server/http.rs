//! The HTTP form (Java's `HttpCommandDecoder` and `HttpProcessHandler`): `GET /cmd`,
//! `GET /cmd?a=x&b=y` (the values are the arguments, in order, names ignored),
//! `GET /cmd/arg`, `POST /cmd` with form fields; a `text/plain` answer, then the
//! connection closes.

use std::convert::Infallible;
use std::net::IpAddr;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use tracing::warn;

use crate::command::{CommandContext, Outcome, Qos};

/// The largest request body (Java's `HttpObjectAggregator(1048576)`).
const MAX_BODY: usize = 1024 * 1024;

fn reply(status: u16, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain"),
    );
    r
}

/// Java's `String.split("/")`: trailing empty parts dropped.
fn java_split(path: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = path.split('/').collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

/// Percent-decoding with `+` as a space, as Netty's `QueryStringDecoder`.
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let hex = |b: u8| {
        char::from(b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            ) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The values of `name=value&...`, grouped by name in order of first appearance, as
/// Netty's `QueryStringDecoder.parameters()` (a `LinkedHashMap` of lists).
fn query_values(query: &str) -> Vec<String> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (decode(k), decode(v));
        match groups.iter_mut().find(|(n, _)| *n == k) {
            Some((_, vs)) => vs.push(v),
            None => groups.push((k, vec![v])),
        }
    }
    groups.into_iter().flat_map(|(_, vs)| vs).collect()
}

/// The values of a form body, in order.
fn form_values(body: &str) -> Vec<String> {
    body.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| decode(pair.split_once('=').map_or("", |(_, v)| v)))
        .collect()
}

/// Answers one request from `peer`.
pub(super) async fn handle(
    qos: Qos,
    peer: IpAddr,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let parts = java_split(&path);
    let method = req.method().clone();
    let query = req.uri().query().unwrap_or("").to_owned();
    let (name, args) = match (parts.as_slice(), &method) {
        ([_, name], &Method::GET) => ((*name).to_owned(), query_values(&query)),
        ([_, name], &Method::POST) => {
            let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => {
                    warn!(peer = %peer, error = %e, "qos request body refused");
                    return Ok(reply(413, Bytes::new()));
                }
            };
            (
                (*name).to_owned(),
                form_values(&String::from_utf8_lossy(&body)),
            )
        }
        ([_, name, arg], &Method::GET) => ((*name).to_owned(), vec![decode(arg)]),
        _ => {
            warn!(peer = %peer, path, "qos request names no command");
            return Ok(reply(404, Bytes::new()));
        }
    };
    let ctx = CommandContext {
        http: true,
        peer: Some(peer),
    };
    Ok(match qos.execute(&name, &args, ctx).await {
        Outcome::Done(r) => reply(r.status, r.body),
        Outcome::NotFound => reply(404, Bytes::new()),
        Outcome::Forbidden => reply(403, Bytes::new()),
        Outcome::Failed(msg) => reply(500, msg),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_as_java() {
        assert_eq!(java_split("/ls"), ["", "ls"]);
        assert_eq!(java_split("/ls/"), ["", "ls"]);
        assert!(java_split("/").is_empty());
        assert_eq!(java_split("/ready/app"), ["", "ready", "app"]);
    }

    #[test]
    fn query_values_grouped_by_name_then_in_order() {
        assert_eq!(query_values("a=1&b=2&a=3"), ["1", "3", "2"]);
        assert_eq!(query_values("p=org.x.%2A&q=a+b"), ["org.x.*", "a b"]);
        assert_eq!(form_values("service=org.x.Svc&x="), ["org.x.Svc", ""]);
    }
}
