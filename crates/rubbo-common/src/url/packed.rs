//! Per-URL strings kept inside the URL's own allocation: the host, and the values of
//! the per-instance keys (`pid`, `timestamp`) that differ between the providers of one
//! service and so would otherwise force a parameter set per provider.

use std::fmt;

/// Bytes stored inline; longer text goes to the heap.
const INLINE: usize = 21;

/// One or two strings: inline when short (the representation only depends on the
/// text, so derived equality and hashing compare text).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) enum Packed {
    Inline {
        len: u8,
        split: u8,
        buf: [u8; INLINE],
    },
    Heap {
        text: Box<str>,
        split: u32,
    },
}

impl Default for Packed {
    fn default() -> Self {
        Packed::two("", "")
    }
}

impl Packed {
    /// One string (`second()` is empty).
    pub(crate) fn one(s: &str) -> Packed {
        Packed::two(s, "")
    }

    /// Two strings.
    pub(crate) fn two(a: &str, b: &str) -> Packed {
        let len = a.len() + b.len();
        match (u8::try_from(len), u8::try_from(a.len())) {
            (Ok(n), Ok(split)) if len <= INLINE => {
                let mut buf = [0u8; INLINE];
                buf[..a.len()].copy_from_slice(a.as_bytes());
                buf[a.len()..len].copy_from_slice(b.as_bytes());
                Packed::Inline { len: n, split, buf }
            }
            _ => {
                let mut text = String::with_capacity(len);
                text.push_str(a);
                text.push_str(b);
                Packed::Heap {
                    text: text.into_boxed_str(),
                    // A split past u32 would need a 4 GiB first string.
                    split: u32::try_from(a.len()).unwrap_or(u32::MAX),
                }
            }
        }
    }

    fn parts(&self) -> (&str, usize) {
        match self {
            Packed::Inline { len, split, buf } => (
                // Always valid: built from two `&str`s.
                std::str::from_utf8(&buf[..usize::from(*len)]).unwrap_or_default(),
                usize::from(*split),
            ),
            Packed::Heap { text, split } => (text, *split as usize),
        }
    }

    /// The first string.
    pub(crate) fn first(&self) -> &str {
        let (text, split) = self.parts();
        text.get(..split).unwrap_or(text)
    }

    /// The second string.
    pub(crate) fn second(&self) -> &str {
        let (text, split) = self.parts();
        text.get(split..).unwrap_or("")
    }
}

impl fmt::Debug for Packed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Packed")
            .field(&self.first())
            .field(&self.second())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_heap_forms() {
        for (a, b) in [
            ("", ""),
            ("48271", "1700000000000"),
            ("10.100.200.250", ""),
            ("a", &"x".repeat(30)),
            ("你好", "世界"),
        ] {
            let p = Packed::two(a, b);
            assert_eq!((p.first(), p.second()), (a, b));
            assert_eq!(p, Packed::two(a, b));
        }
        assert!(matches!(
            Packed::two("48271", "1700000000000"),
            Packed::Inline { .. }
        ));
        assert_ne!(Packed::two("ab", "c"), Packed::two("a", "bc"));
        assert_eq!(std::mem::size_of::<Packed>(), 24);
        assert_eq!(std::mem::size_of::<Option<Packed>>(), 24);
    }
}
