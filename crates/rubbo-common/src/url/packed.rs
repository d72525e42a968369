//! Per-URL data kept inside the URL's own allocation: the host, the port, and the
//! values of the per-instance keys (`pid`, `timestamp`) that differ between the
//! providers of one service and so would otherwise force a parameter set per provider.

use std::fmt;

/// Bytes stored inline (an IPv4 host, a pid and a millisecond timestamp fit); longer
/// text goes to the heap.
const INLINE: usize = 33;

/// Two values and an optional host, with a port: inline when short. The representation
/// only depends on the content, so derived equality and hashing compare content.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) enum Packed {
    Inline {
        port: u16,
        /// Ends of the first and the second value, then of the host.
        ends: [u8; 3],
        has_host: bool,
        buf: [u8; INLINE],
    },
    Heap {
        text: Box<str>,
        ends: [u32; 2],
        port: u16,
        has_host: bool,
    },
}

impl Default for Packed {
    fn default() -> Self {
        Packed::new("", "", None, 0)
    }
}

impl Packed {
    /// Values `a` and `b`, `host` and `port`.
    pub(crate) fn new(a: &str, b: &str, host: Option<&str>, port: u16) -> Packed {
        let h = host.unwrap_or("");
        let has_host = host.is_some();
        let len = a.len() + b.len() + h.len();
        if len <= INLINE {
            let mut buf = [0u8; INLINE];
            let (e1, e2) = (a.len(), a.len() + b.len());
            buf[..e1].copy_from_slice(a.as_bytes());
            buf[e1..e2].copy_from_slice(b.as_bytes());
            buf[e2..len].copy_from_slice(h.as_bytes());
            // All three are at most INLINE (33), so they fit a byte.
            let byte = |n: usize| u8::try_from(n).unwrap_or(u8::MAX);
            return Packed::Inline {
                port,
                ends: [byte(e1), byte(e2), byte(len)],
                has_host,
                buf,
            };
        }
        let mut text = String::with_capacity(len);
        text.push_str(a);
        text.push_str(b);
        text.push_str(h);
        let word = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Packed::Heap {
            text: text.into_boxed_str(),
            ends: [word(a.len()), word(a.len() + b.len())],
            port,
            has_host,
        }
    }

    /// The whole text and the ends of the first and second value.
    fn parts(&self) -> (&str, usize, usize) {
        match self {
            Packed::Inline { ends, buf, .. } => (
                // Always valid: built from three `&str`s.
                std::str::from_utf8(&buf[..usize::from(ends[2])]).unwrap_or_default(),
                usize::from(ends[0]),
                usize::from(ends[1]),
            ),
            Packed::Heap { text, ends, .. } => (text, ends[0] as usize, ends[1] as usize),
        }
    }

    /// The first value.
    pub(crate) fn first(&self) -> &str {
        let (text, e1, _) = self.parts();
        text.get(..e1).unwrap_or("")
    }

    /// The second value.
    pub(crate) fn second(&self) -> &str {
        let (text, e1, e2) = self.parts();
        text.get(e1..e2).unwrap_or("")
    }

    /// The host, if any.
    pub(crate) fn host(&self) -> Option<&str> {
        let (text, _, e2) = self.parts();
        let has = match self {
            Packed::Inline { has_host, .. } | Packed::Heap { has_host, .. } => *has_host,
        };
        has.then(|| text.get(e2..).unwrap_or(""))
    }

    /// The port.
    pub(crate) fn port(&self) -> u16 {
        match self {
            Packed::Inline { port, .. } | Packed::Heap { port, .. } => *port,
        }
    }

    /// Whether both values are equal (host and port aside).
    pub(crate) fn values_eq(&self, other: &Packed) -> bool {
        self.first() == other.first() && self.second() == other.second()
    }

    /// These values with another host and port.
    pub(crate) fn at(&self, host: Option<&str>, port: u16) -> Packed {
        Packed::new(self.first(), self.second(), host, port)
    }
}

impl fmt::Debug for Packed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packed")
            .field("values", &(self.first(), self.second()))
            .field("host", &self.host())
            .field("port", &self.port())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_heap_forms() {
        let long = "x".repeat(40);
        for (a, b, h) in [
            ("", "", None),
            ("48271", "1700000000000", Some("10.100.200.250")),
            ("4827100", "1700000000000", Some("10.33.255.255")),
            ("", "", Some("")),
            ("a", long.as_str(), None),
            ("你好", "世界", Some("主机")),
        ] {
            let p = Packed::new(a, b, h, 20880);
            assert_eq!(
                (p.first(), p.second(), p.host(), p.port()),
                (a, b, h, 20880)
            );
            assert_eq!(p, Packed::new(a, b, h, 20880));
            assert!(p.values_eq(&p.at(Some("other"), 1)));
        }
        assert!(matches!(
            Packed::new("4827100", "1700000000000", Some("10.33.255.255"), 1),
            Packed::Inline { .. }
        ));
        assert_ne!(
            Packed::new("ab", "c", None, 0),
            Packed::new("a", "bc", None, 0)
        );
        assert_ne!(
            Packed::new("", "", None, 0),
            Packed::new("", "", Some(""), 0)
        );
        assert_eq!(std::mem::size_of::<Packed>(), 40);
    }
}
