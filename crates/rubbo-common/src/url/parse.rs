//! URL parsing, following Java Dubbo's `URLStrParser` step by step so that every
//! irregular form Java accepts parses to the same parts here.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::encode::decode_with;
use super::intern::intern;
use super::intern::share_base;
use super::params::SLOT_KEYS;
use super::{AddrBase, Url, UrlError, UrlParams};
use crate::keys::DEFAULT_KEY_PREFIX;

type Map = BTreeMap<Arc<str>, Arc<str>>;

pub(super) fn parse_decoded(s: &str) -> Result<Url, UrlError> {
    let (body, params) = match s.find('?') {
        Some(i) => (&s[..i], parse_params(&s[i + 1..], false)?),
        None => (s, Map::new()),
    };
    parse_body(s, body, params)
}

pub(super) fn parse_encoded(s: &str) -> Result<Url, UrlError> {
    let (body, params) = match s.find("%3F") {
        Some(i) => (&s[..i], parse_params(&s[i + 3..], true)?),
        None => (s, Map::new()),
    };
    let body = decode_with(body, true)?;
    parse_body(s, &body, params)
}

/// Splits `k=v` pairs on `&` and `;`. In encoded input the separators are themselves
/// encoded (`%26`, `%3D`) and each key and value is decoded once.
fn parse_params(s: &str, encoded: bool) -> Result<Map, UrlError> {
    let mut map = Map::new();
    if s.is_empty() {
        return Ok(map);
    }
    let decoded_owned;
    let pairs: Vec<&str> = if encoded {
        // Separators appear as %26 / %3B / %3D; split on the encoded forms so that a
        // value that was encoded twice (a nested URL) keeps its own separators.
        decoded_owned = if s.contains("%3B") {
            Cow::Owned(s.replace("%3B", "%26"))
        } else {
            Cow::Borrowed(s)
        };
        decoded_owned.split("%26").collect()
    } else {
        s.split(['&', ';']).collect()
    };
    for mut pair in pairs {
        // Java skips '=' at the start of a name.
        loop {
            let rest = if encoded {
                pair.strip_prefix("%3D")
            } else {
                pair.strip_prefix('=')
            };
            match rest {
                Some(r) => pair = r,
                None => break,
            }
        }
        let (k, v): (Cow<'_, str>, Option<Cow<'_, str>>) = if encoded {
            match pair.split_once("%3D") {
                Some((k, v)) => (decode_with(k, true)?, Some(decode_with(v, true)?)),
                None => (decode_with(pair, true)?, None),
            }
        } else {
            match pair.split_once('=') {
                Some((k, v)) => (Cow::Borrowed(k), Some(Cow::Borrowed(v))),
                None => (Cow::Borrowed(pair), None),
            }
        };
        // Empty names are skipped; a bare key stands for itself.
        let k = &*k;
        if k.is_empty() {
            continue;
        }
        let v = v.unwrap_or(Cow::Borrowed(k));
        let key = intern(k);
        // Per-instance values (pid, timestamp) are unique: not worth a table entry.
        let value = if SLOT_KEYS.contains(&k) {
            Arc::from(&*v)
        } else {
            intern(&v)
        };
        if let Some(plain) = k.strip_prefix(DEFAULT_KEY_PREFIX) {
            if !plain.is_empty() {
                map.entry(intern(plain)).or_insert_with(|| value.clone());
            }
        }
        map.insert(key, value);
    }
    Ok(map)
}

/// `[protocol://][username[:password]@][host[:port]][/path]`
fn parse_body(full: &str, body: &str, params: Map) -> Result<Url, UrlError> {
    let mut start = 0;
    let mut end = body.len();
    let mut protocol = None;
    if let Some(i) = body.find("://") {
        if i == 0 {
            return Err(UrlError::MissingProtocol(full.to_owned()));
        }
        protocol = Some(&body[..i]);
        start = i + 3;
    } else if let Some(i) = body.find(":/") {
        // file:/path/to/file.txt
        if i == 0 {
            return Err(UrlError::MissingProtocol(full.to_owned()));
        }
        protocol = Some(&body[..i]);
        start = i + 1;
    }

    let mut path = None;
    if let Some(i) = body[start..].find('/') {
        path = Some(&body[start + i + 1..]);
        end = start + i;
    }

    let mut username = None;
    let mut password = None;
    if let Some(at) = body[start..end].rfind('@') {
        let creds = &body[start..start + at];
        match creds.split_once(':') {
            Some((u, p)) => {
                username = Some(u);
                password = Some(p);
            }
            None => username = Some(creds),
        }
        start += at + 1;
    }

    let hostport = &body[start..end];
    let (host, port) = split_host_port(full, hostport)?;

    let username = username.filter(|u| !u.is_empty());
    let password = password.filter(|p| !p.is_empty());
    if username.is_none() && password.is_some() {
        return Err(UrlError::PasswordWithoutUsername(full.to_owned()));
    }
    let path = path
        .map(|p| p.trim_start_matches('/'))
        .filter(|p| !p.is_empty());

    let base = share_base(AddrBase {
        protocol: protocol.map(intern),
        username: username.map(Into::into),
        password: password.map(Into::into),
        path: path.map(intern),
    });
    let params = UrlParams::from_map_at(params, host.filter(|h| !h.is_empty()), port);
    Ok(Url::from_parts(base, params))
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`, or a bare IPv6 address with a zone id
/// (`fe80::1%en0`, where Java does not look for a port).
fn split_host_port<'a>(full: &str, s: &'a str) -> Result<(Option<&'a str>, u16), UrlError> {
    if s.is_empty() {
        return Ok((None, 0));
    }
    if let Some(rest) = s.strip_prefix('[') {
        let close = rest
            .find(']')
            .ok_or_else(|| UrlError::UnterminatedBracket(full.to_owned()))?;
        let host = &rest[..close];
        let after = &rest[close + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => parse_port(full, p)?,
            None if after.is_empty() => 0,
            None => {
                return Err(UrlError::BadPort {
                    url: full.to_owned(),
                    port: after.to_owned(),
                });
            }
        };
        return Ok((Some(host), port));
    }
    match s.rfind(':') {
        // A '%' after the last ':' is an IPv6 zone id, not a port (Java ignores it).
        Some(i) if i > 0 && i < s.len() - 1 && !s[i..].contains('%') => {
            Ok((Some(&s[..i]), parse_port(full, &s[i + 1..])?))
        }
        // "host:" keeps the colon out of the host, as Java's index checks do.
        Some(i) if i == s.len() - 1 => Ok((Some(&s[..i]), 0)),
        _ => Ok((Some(s), 0)),
    }
}

/// Java parses the port as an `int` and clamps negatives to 0.
fn parse_port(full: &str, p: &str) -> Result<u16, UrlError> {
    let bad = || UrlError::BadPort {
        url: full.to_owned(),
        port: p.to_owned(),
    };
    let n: i64 = p.parse().map_err(|_| bad())?;
    if n < 0 {
        return Ok(0);
    }
    u16::try_from(n).map_err(|_| bad())
}
