//! The HTTP/2 settings of a Triple server or connection, from URL keys, with Java's
//! defaults (`TripleConfig.java`): initial window 8 MiB, max frame 8 MiB, header list
//! 32 KiB, unbounded concurrent streams.

use rubbo_common::Url;
use rubbo_common::keys::{
    self, TripleInitialWindowSize, TripleMaxConcurrentStreams, TripleMaxFrameSize,
    TripleMaxHeaderListSize,
};

/// HTTP/2's bounds on SETTINGS_MAX_FRAME_SIZE (RFC 9113 §6.5.2).
const MIN_FRAME: u32 = 16_384;
const MAX_FRAME: u32 = 16_777_215;
/// The largest flow-control window (2^31 - 1).
const MAX_WINDOW: u32 = 2_147_483_647;

/// HTTP/2 settings, clamped to what HTTP/2 allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2Settings {
    /// SETTINGS_INITIAL_WINDOW_SIZE, and the connection window we open.
    pub initial_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE.
    pub max_frame: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub max_header_list: u32,
    /// SETTINGS_MAX_CONCURRENT_STREAMS (servers).
    pub max_concurrent_streams: u32,
}

impl Default for H2Settings {
    fn default() -> Self {
        H2Settings {
            initial_window: TripleInitialWindowSize::DEFAULT,
            max_frame: TripleMaxFrameSize::DEFAULT,
            max_header_list: TripleMaxHeaderListSize::DEFAULT,
            max_concurrent_streams: TripleMaxConcurrentStreams::DEFAULT,
        }
    }
}

impl H2Settings {
    /// The settings `url` asks for (`triple.initial-window-size`, ...).
    pub fn from_url(url: &Url) -> Self {
        H2Settings {
            initial_window: url.param::<TripleInitialWindowSize>().clamp(1, MAX_WINDOW),
            max_frame: url
                .param::<TripleMaxFrameSize>()
                .clamp(MIN_FRAME, MAX_FRAME),
            max_header_list: url.param::<TripleMaxHeaderListSize>(),
            max_concurrent_streams: url.param::<keys::TripleMaxConcurrentStreams>(),
        }
    }
}

/// The provider URL key that picks the transport serving HTTP/2 with prior
/// knowledge: `native` (Rubbo's own HTTP/2 server, `src/native/`) or `hyper`. Rubbo's
/// own key: Java has no such choice. HTTP/1.1, the JSON form and the h2c upgrade are
/// served by hyper either way.
pub const TRANSPORT_KEY: &str = keys::TRIPLE_TRANSPORT_KEY;

/// Which transport serves HTTP/2 with prior knowledge ([`TRANSPORT_KEY`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// Rubbo's own HTTP/2 server.
    #[default]
    Native,
    /// hyper's.
    Hyper,
}

impl Transport {
    /// The transport `url` asks for (unknown values: the default, with a warning).
    pub fn from_url(url: &Url) -> Self {
        match url.get_param(TRANSPORT_KEY).map(str::trim) {
            None | Some("") => Transport::default(),
            Some(v) if v.eq_ignore_ascii_case("native") => Transport::Native,
            Some(v) if v.eq_ignore_ascii_case("hyper") => Transport::Hyper,
            Some(v) => {
                tracing::warn!(
                    key = TRANSPORT_KEY,
                    value = v,
                    "unknown Triple transport, using the default"
                );
                Transport::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_defaults_apply_and_urls_override_within_http2_bounds() {
        let d = H2Settings::from_url(&Url::parse("tri://h:1/S").unwrap());
        assert_eq!(d, H2Settings::default());
        assert_eq!(
            (d.initial_window, d.max_frame, d.max_header_list),
            (8 << 20, 8 << 20, 32 << 10)
        );
        let u = Url::parse(
            "tri://h:1/S?triple.max-frame-size=1&triple.initial-window-size=65535&triple.max-header-list-size=1000",
        )
        .unwrap();
        let s = H2Settings::from_url(&u);
        assert_eq!(
            (s.max_frame, s.initial_window, s.max_header_list),
            (16_384, 65_535, 1000)
        );
    }
}
