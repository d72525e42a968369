//! Percent-encoding exactly as Java Dubbo's `URL.encode` / `URL.decode` do it.
//!
//! Those are `java.net.URLEncoder` / `URLDecoder` with UTF-8 (HTML form encoding):
//! ASCII letters, digits and `.-*_` are kept, a space becomes `+`, every other byte of
//! the UTF-8 form becomes `%XX` with upper-case hex. Dubbo uses this whenever a whole URL
//! is embedded in another one: ZooKeeper node names, `export=` / `refer=` parameters.

use std::borrow::Cow;

use super::UrlError;

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Encodes `s` as Java's `URLEncoder.encode(s, "UTF-8")` does.
///
/// ```
/// use rubbo_common::url::encode;
/// assert_eq!(encode("dubbo://1.2.3.4:20880/a.B?x=1&y=a b"),
///            "dubbo%3A%2F%2F1.2.3.4%3A20880%2Fa.B%3Fx%3D1%26y%3Da+b");
/// ```
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 2);
    for &b in s.as_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            }
        }
    }
    out
}

/// Decodes `s` as Java's `URLDecoder.decode(s, "UTF-8")` does: `+` is a space and
/// `%XX` sequences are UTF-8 bytes.
///
/// A truncated or non-hex escape is an error, as in Java. Byte sequences that are not
/// valid UTF-8 become U+FFFD, as Java's decoder does.
///
/// ```
/// use rubbo_common::url::decode;
/// assert_eq!(decode("a+b%3D%E4%BD%A0").unwrap(), "a b=你");
/// ```
pub fn decode(s: &str) -> Result<String, UrlError> {
    decode_with(s, true).map(Cow::into_owned)
}

/// Decodes `%XX` escapes, turning `+` into a space only when `plus_is_space`; borrows
/// `s` when there is nothing to decode.
pub(crate) fn decode_with(s: &str, plus_is_space: bool) -> Result<Cow<'_, str>, UrlError> {
    if !s.bytes().any(|b| b == b'%' || (plus_is_space && b == b'+')) {
        return Ok(Cow::Borrowed(s));
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .ok_or_else(|| UrlError::BadEscape(s.to_owned(), i))?;
                let hi = hex_value(hex[0]).ok_or_else(|| UrlError::BadEscape(s.to_owned(), i))?;
                let lo = hex_value(hex[1]).ok_or_else(|| UrlError::BadEscape(s.to_owned(), i))?;
                out.push(hi << 4 | lo);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(Cow::Owned(String::from_utf8(out).unwrap_or_else(|e| {
        String::from_utf8_lossy(e.as_bytes()).into_owned()
    })))
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn java_urlencoder_character_classes() {
        assert_eq!(encode("azAZ09.-*_"), "azAZ09.-*_");
        assert_eq!(encode(" "), "+");
        assert_eq!(encode("~!'()"), "%7E%21%27%28%29");
        assert_eq!(encode("/:?=&,"), "%2F%3A%3F%3D%26%2C");
        assert_eq!(encode("é"), "%C3%A9");
        assert_eq!(encode("😀"), "%F0%9F%98%80");
    }

    #[test]
    fn decode_rejects_truncated_and_non_hex_escapes() {
        assert!(decode("abc%2").is_err());
        assert!(decode("abc%zz").is_err());
        assert_eq!(decode("%41%62").unwrap(), "Ab");
        assert_eq!(decode("%e4%bd%a0").unwrap(), "你");
    }

    #[test]
    fn double_encoding_nests() {
        let inner = "dubbo://h:1/p?a=1&b=2";
        let once = encode(inner);
        let twice = encode(&once);
        assert_eq!(decode(&decode(&twice).unwrap()).unwrap(), inner);
    }

    proptest! {
        #[test]
        fn decode_inverts_encode(s in "\\PC*") {
            prop_assert_eq!(decode(&encode(&s)).unwrap(), s);
        }
    }
}
