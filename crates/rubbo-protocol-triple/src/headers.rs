//! Triple's header names, and call attachments carried as headers (Java's
//! `StreamUtils.putHeaders` / `toAttachments`): keys lower-cased, binary values under
//! `{key}-bin` in unpadded base64, the original case of upper-case keys in
//! `tri-header-convert`.

use std::borrow::Cow;
use std::collections::HashMap;

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use http::{HeaderMap, HeaderName, HeaderValue};
use rubbo_common::{Attachments, Value, keys};
use tracing::debug;

use crate::status;

/// `content-type` of gRPC requests as Java sends them.
pub const GRPC_PROTO: &str = "application/grpc+proto";
/// `content-type` of gRPC responses as Java sends them.
pub const GRPC: &str = "application/grpc";
/// `grpc-status`.
pub const GRPC_STATUS: &str = "grpc-status";
/// `grpc-message` (percent-encoded).
pub const GRPC_MESSAGE: &str = "grpc-message";
/// `grpc-timeout`.
pub const GRPC_TIMEOUT: &str = "grpc-timeout";
/// `grpc-encoding`: the message compression.
pub const GRPC_ENCODING: &str = "grpc-encoding";
/// `tri-consumer-appname`: the consumer's application.
pub const CONSUMER_APP_NAME: &str = "tri-consumer-appname";
/// `tri-service-version`.
pub const SERVICE_VERSION: &str = "tri-service-version";
/// `tri-service-group`.
pub const SERVICE_GROUP: &str = "tri-service-group";
/// `tri-service-timeout`: the timeout in plain milliseconds.
pub const SERVICE_TIMEOUT: &str = "tri-service-timeout";
/// `tri-header-convert`: `{lowercase: original}` of upper-case attachment keys.
pub const HEADER_CONVERT: &str = "tri-header-convert";
/// `tri-exception-code`: set on a wrapper-mode response whose body is an exception.
pub const EXCEPTION_CODE: &str = "tri-exception-code";

/// Headers that never become attachments, nor attachments headers: Java's
/// `TripleHeaderEnum` names plus its internal keys.
const EXCLUDED: &[&str] = &[
    "http-status",
    GRPC_STATUS,
    GRPC_MESSAGE,
    "grpc-status-details-bin",
    GRPC_TIMEOUT,
    GRPC_ENCODING,
    "grpc-accept-encoding",
    crate::compress::COMPRESSOR_KEY,
    CONSUMER_APP_NAME,
    SERVICE_VERSION,
    SERVICE_GROUP,
    SERVICE_TIMEOUT,
    HEADER_CONVERT,
    EXCEPTION_CODE,
    keys::GROUP_KEY,
    keys::INTERFACE_KEY,
    keys::PATH_KEY,
    keys::REMOTE_APPLICATION_KEY,
    keys::APPLICATION_KEY,
    "serialization",
    "rest-service-version",
    "rest-service-group",
];

fn excluded(key: &str) -> bool {
    EXCLUDED.contains(&key)
}

/// Base64 as Java writes it (no padding), read with or without padding.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Adds `attachments` to `headers`. Values that are not strings, numbers, booleans
/// or bytes are dropped, as Java drops them.
pub fn put_attachments(headers: &mut HeaderMap, attachments: &Attachments) {
    let mut converted: HashMap<String, &str> = HashMap::new();
    for (key, value) in attachments {
        let lower = key.to_ascii_lowercase();
        if excluded(&lower) {
            continue;
        }
        let (name, text) = match value {
            Value::Null => continue,
            Value::String(s) => (lower.clone(), s.clone()),
            Value::Bool(b) => (lower.clone(), b.to_string()),
            Value::Int(i) => (lower.clone(), i.to_string()),
            Value::Long(l) => (lower.clone(), l.to_string()),
            Value::Double(d) => (lower.clone(), d.to_string()),
            Value::Binary(b) => (format!("{lower}-bin"), BASE64.encode(b)),
            _ => {
                debug!(key = %key, "attachment of an unsupported type not sent");
                continue;
            }
        };
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(&value_bytes(&text)),
        ) {
            (Ok(n), Ok(v)) => {
                headers.insert(n, v);
                if lower != *key {
                    converted.insert(lower, key);
                }
            }
            _ => debug!(key = %key, "attachment not valid as a header, not sent"),
        }
    }
    if !converted.is_empty() {
        if let Ok(json) = serde_json::to_string(&converted) {
            if let Ok(v) = HeaderValue::from_str(&status::encode_message(&json)) {
                headers.insert(HEADER_CONVERT, v);
            }
        }
    }
}

/// The attachments carried by `headers` (request headers on a provider, trailers on
/// a consumer): every header but the reserved ones, `-bin` values decoded.
pub fn attachments_from(headers: &HeaderMap) -> Attachments {
    attachments_except(headers, &[])
}

/// [`attachments_from`], skipping the headers named in `skip` (lower case).
fn attachments_except(headers: &HeaderMap, skip: &[&str]) -> Attachments {
    let mut out = Attachments::new();
    for (name, value) in headers {
        let key = name.as_str();
        if skip.contains(&key) {
            continue;
        }
        if let Some(base) = key.strip_suffix("-bin").filter(|b| !b.is_empty()) {
            if excluded(key) || excluded(base) {
                continue;
            }
            match BASE64.decode(value.as_bytes()) {
                Ok(bytes) => {
                    out.insert(base.to_owned(), Value::Binary(bytes));
                }
                Err(e) => debug!(key, error = %e, "undecodable binary header ignored"),
            }
        } else if !excluded(key) {
            out.insert(key.to_owned(), Value::String(value_text(value.as_bytes())));
        }
    }
    if let Some(raw) = headers.get(HEADER_CONVERT) {
        let json = status::decode_message(raw.as_bytes());
        if let Ok(map) = serde_json::from_str::<HashMap<String, String>>(&json) {
            for (lower, original) in map {
                if let Some(v) = out.remove(&lower) {
                    if !excluded(&original) {
                        out.insert(original, v);
                    }
                }
            }
        }
    }
    out
}

/// Headers of a response that are HTTP's or gRPC's own, never attachments.
const RESPONSE_HEADERS_NOT_ATTACHMENTS: &[&str] = &["content-type", "date", "server"];

/// The attachments carried by a response's *headers* (gRPC's initial metadata), as
/// [`attachments_from`] reads them, without `content-type` and the other headers a
/// server adds on its own.
pub fn attachments_from_response_headers(headers: &HeaderMap) -> Attachments {
    attachments_except(headers, RESPONSE_HEADERS_NOT_ATTACHMENTS)
}

/// The bytes of a header value. Java (Netty) writes header values as ISO-8859-1, so
/// text that fits is sent that way; other text goes as UTF-8 (which Java reads as
/// ISO-8859-1, where Java's own encoding would have lost those characters).
fn value_bytes(text: &str) -> Cow<'_, [u8]> {
    if text.is_ascii() {
        return Cow::Borrowed(text.as_bytes());
    }
    let latin1: Option<Vec<u8>> = text
        .chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect();
    match latin1 {
        Some(bytes) => Cow::Owned(bytes),
        None => Cow::Borrowed(text.as_bytes()),
    }
}

/// The text of a header value: UTF-8 when it is valid UTF-8 (ASCII is), else
/// ISO-8859-1, as Java writes it.
fn value_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

/// A header as text, if present and valid.
pub fn get(headers: &HeaderMap, name: impl http::header::AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_travel_lower_cased_with_binary_and_case_restored() {
        let mut a = Attachments::new();
        a.insert("trace-id".into(), Value::from("abc"));
        a.insert("TraceFlag".into(), Value::Bool(true));
        a.insert("n".into(), Value::Int(7));
        a.insert("blob".into(), Value::Binary(vec![0, 1, 2, 255]));
        a.insert("interface".into(), Value::from("x"));
        a.insert("obj".into(), Value::List(Default::default()));
        a.insert("latin".into(), Value::from("värde"));
        a.insert("emoji".into(), Value::from("a 😀"));
        let mut h = HeaderMap::new();
        put_attachments(&mut h, &a);
        assert_eq!(get(&h, "trace-id"), Some("abc"));
        assert_eq!(get(&h, "traceflag"), Some("true"));
        assert_eq!(get(&h, "blob-bin"), Some("AAEC/w"), "unpadded base64");
        assert!(h.get("interface").is_none() && h.get("obj").is_none());
        assert!(h.get(HEADER_CONVERT).is_some());

        let back = attachments_from(&h);
        assert_eq!(back.get("trace-id"), Some(&Value::from("abc")));
        assert_eq!(back.get("TraceFlag"), Some(&Value::from("true")));
        assert_eq!(back.get("n"), Some(&Value::from("7")));
        assert_eq!(back.get("blob"), Some(&Value::Binary(vec![0, 1, 2, 255])));
        assert!(!back.contains_key(HEADER_CONVERT));
        assert_eq!(
            h.get("latin").unwrap().as_bytes(),
            b"v\xe4rde",
            "ISO-8859-1, as Java"
        );
        assert_eq!(back.get("latin"), Some(&Value::from("värde")));
        assert_eq!(
            back.get("emoji"),
            Some(&Value::from("a 😀")),
            "UTF-8 beyond Latin-1"
        );

        let mut response = HeaderMap::new();
        response.insert("content-type", HeaderValue::from_static(GRPC));
        response.insert(
            "date",
            HeaderValue::from_static("Tue, 1 Jan 2030 00:00:00 GMT"),
        );
        response.insert("x-bytes-bin", HeaderValue::from_static("q6ur"));
        response.insert("x-echo", HeaderValue::from_static("v"));
        let a = attachments_from_response_headers(&response);
        assert_eq!(a.len(), 2, "only the metadata: {a:?}");
        assert_eq!(a.get("x-echo"), Some(&Value::from("v")));
        assert_eq!(a.get("x-bytes"), Some(&Value::Binary(vec![0xab; 3])));

        let mut padded = HeaderMap::new();
        padded.insert("k-bin", HeaderValue::from_static("AAEC/w=="));
        padded.insert(GRPC_STATUS, HeaderValue::from_static("0"));
        let a = attachments_from(&padded);
        assert_eq!(a.get("k"), Some(&Value::Binary(vec![0, 1, 2, 255])));
        assert!(!a.contains_key(GRPC_STATUS));
    }
}
