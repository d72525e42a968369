//! gRPC message compression (`grpc-encoding`), with the encodings Java 3.3 ships
//! (`rpc-tri/compressor/{Identity,Gzip,Snappy,Bzip2}.java`): `gzip` (RFC 1952),
//! `snappy` (the raw block format, as xerial's `Snappy.compress` writes it) and
//! `bzip2`. Which one a side sends is picked by [`COMPRESSOR_KEY`], Java's
//! `dubbo.rpc.tri.compressor`; every side takes all of them.
//!
//! Decompression is bounded: a message inflates to at most `payload` bytes, and a
//! larger one (a zip bomb) is [`TripleError::TooLarge`] after at most that many
//! bytes were produced, not an allocation of what it claims.
//!
//! The identity path costs nothing: an uncompressed message is sliced out of the
//! body as before; only a message with the compressed flag goes through here.

use std::io::{Read, Write};

use bytes::Bytes;

use crate::error::TripleError;

/// The URL key naming the compressor a side sends with (Java's
/// `Constants.COMPRESSOR_KEY`): `identity` (the default), `gzip`, `snappy` or `bzip2`.
pub const COMPRESSOR_KEY: &str = "dubbo.rpc.tri.compressor";

/// The header naming the encodings a peer takes.
pub const GRPC_ACCEPT_ENCODING: &str = "grpc-accept-encoding";

/// What this side decompresses, as Java lists it (sorted, comma-joined).
pub const ACCEPTED: &str = "bzip2,gzip,snappy";

/// A message encoding other than identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Encoding {
    /// `gzip`.
    Gzip,
    /// `snappy`, raw block format.
    Snappy,
    /// `bzip2`.
    Bzip2,
}

/// What a `grpc-encoding` value names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// `identity`: messages are not compressed.
    Identity,
    /// A known encoding.
    Known(Encoding),
    /// An encoding this side does not speak.
    Unknown,
}

impl Encoding {
    /// What `name` (a `grpc-encoding` value or a [`COMPRESSOR_KEY`] value) names.
    pub fn parse(name: &str) -> Named {
        match name.trim() {
            "" | "identity" => Named::Identity,
            "gzip" => Named::Known(Encoding::Gzip),
            "snappy" => Named::Known(Encoding::Snappy),
            "bzip2" => Named::Known(Encoding::Bzip2),
            _ => Named::Unknown,
        }
    }

    /// The encoding a configured compressor name asks for (`None`: identity).
    /// An unknown name is an error, as Java's extension lookup fails.
    pub fn configured(name: Option<&str>) -> Result<Option<Encoding>, TripleError> {
        match name.map(Encoding::parse) {
            None | Some(Named::Identity) => Ok(None),
            Some(Named::Known(e)) => Ok(Some(e)),
            Some(Named::Unknown) => Err(TripleError::UnknownCompressor(
                name.unwrap_or_default().to_owned(),
            )),
        }
    }

    /// Its `grpc-encoding` name.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Gzip => "gzip",
            Encoding::Snappy => "snappy",
            Encoding::Bzip2 => "bzip2",
        }
    }

    /// Whether a `grpc-accept-encoding` value lists this encoding.
    pub fn accepted_by(self, accept: &str) -> bool {
        accept.split(',').any(|e| e.trim() == self.name())
    }

    /// Compresses one message.
    pub fn compress(self, message: &[u8]) -> Result<Vec<u8>, TripleError> {
        let io = |e: std::io::Error| TripleError::Compression(e.to_string());
        match self {
            Encoding::Gzip => {
                let mut w = flate2::write::GzEncoder::new(
                    Vec::with_capacity(message.len() / 2 + 32),
                    flate2::Compression::default(),
                );
                w.write_all(message).map_err(io)?;
                w.finish().map_err(io)
            }
            Encoding::Snappy => snap::raw::Encoder::new()
                .compress_vec(message)
                .map_err(|e| TripleError::Compression(e.to_string())),
            Encoding::Bzip2 => {
                let mut w = bzip2::write::BzEncoder::new(
                    Vec::with_capacity(message.len() / 2 + 64),
                    bzip2::Compression::default(),
                );
                w.write_all(message).map_err(io)?;
                w.finish().map_err(io)
            }
        }
    }

    /// Decompresses one message to at most `max` bytes (0 or less: no limit).
    pub fn decompress(self, message: &[u8], max: i64) -> Result<Bytes, TripleError> {
        let limit = if max > 0 {
            usize::try_from(max).unwrap_or(usize::MAX)
        } else {
            usize::MAX
        };
        let bad = |e: std::io::Error| TripleError::Decompression {
            encoding: self.name(),
            reason: e.to_string(),
        };
        let out = match self {
            Encoding::Snappy => {
                // The block format states its length first: checked before anything
                // is allocated.
                let len =
                    snap::raw::decompress_len(message).map_err(|e| TripleError::Decompression {
                        encoding: self.name(),
                        reason: e.to_string(),
                    })?;
                if len > limit {
                    return Err(TripleError::TooLarge { len, max: limit });
                }
                snap::raw::Decoder::new()
                    .decompress_vec(message)
                    .map_err(|e| TripleError::Decompression {
                        encoding: self.name(),
                        reason: e.to_string(),
                    })?
            }
            Encoding::Gzip => {
                read_bounded(flate2::read::MultiGzDecoder::new(message), limit).map_err(bad)?
            }
            Encoding::Bzip2 => {
                read_bounded(bzip2::read::MultiBzDecoder::new(message), limit).map_err(bad)?
            }
        };
        if out.len() > limit {
            return Err(TripleError::TooLarge {
                len: out.len(),
                max: limit,
            });
        }
        Ok(Bytes::from(out))
    }
}

/// Reads `r` to its end, or to one byte past `limit` (which the caller refuses):
/// never more.
fn read_bounded(r: impl Read, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    r.take(cap).read_to_end(&mut out)?;
    Ok(out)
}

/// The compression of one call on the server: how its requests came, what the
/// client takes back, and what the provider would answer with.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallCoding {
    /// The request's `grpc-encoding` (`None`: identity).
    pub(crate) request: Option<Encoding>,
    /// The encodings the request's `grpc-accept-encoding` lists, as bits.
    accepted: u8,
    /// The provider's [`COMPRESSOR_KEY`].
    configured: Option<Encoding>,
}

impl Encoding {
    fn bit(self) -> u8 {
        match self {
            Encoding::Gzip => 1,
            Encoding::Snappy => 2,
            Encoding::Bzip2 => 4,
        }
    }
}

impl CallCoding {
    /// The coding of a call whose request came with `request` encoding and listed
    /// `accept`, on a provider configured with `configured`.
    pub(crate) fn new(
        request: Option<Encoding>,
        accept: Option<&str>,
        configured: Option<Encoding>,
    ) -> Self {
        let accepted = accept.map_or(0, |a| {
            a.split(',').fold(0, |bits, e| match Encoding::parse(e) {
                Named::Known(e) => bits | e.bit(),
                _ => bits,
            })
        });
        CallCoding {
            request,
            accepted,
            configured,
        }
    }

    /// The encoding of the replies: what the service asked for in its header
    /// attachments ([`COMPRESSOR_KEY`], as Java's `setCompression`), else the
    /// provider's configured one; either only if the client takes it.
    pub(crate) fn reply(&self, header_attachments: &rubbo_common::Attachments) -> Option<Encoding> {
        let wanted = match header_attachments.get(COMPRESSOR_KEY) {
            Some(rubbo_common::Value::String(name)) => match Encoding::parse(name) {
                Named::Known(e) => Some(e),
                Named::Identity | Named::Unknown => None,
            },
            _ => self.configured,
        }?;
        if self.accepted & wanted.bit() != 0 {
            Some(wanted)
        } else {
            tracing::debug!(
                encoding = wanted.name(),
                "the client does not accept it: replies go uncompressed"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Encoding; 3] = [Encoding::Gzip, Encoding::Snappy, Encoding::Bzip2];

    #[test]
    fn every_encoding_round_trips_and_names_parse_like_java() {
        let message: Vec<u8> = b"hello triple ".repeat(100);
        for e in ALL {
            let c = e.compress(&message).unwrap();
            assert!(c.len() < message.len(), "{e:?} compresses");
            assert_eq!(&e.decompress(&c, 0).unwrap()[..], &message[..], "{e:?}");
            assert_eq!(
                &e.decompress(&e.compress(b"").unwrap(), 10).unwrap()[..],
                b""
            );
            assert_eq!(Encoding::parse(e.name()), Named::Known(e));
            assert!(e.accepted_by(ACCEPTED));
        }
        assert_eq!(Encoding::parse("identity"), Named::Identity);
        assert_eq!(Encoding::parse("deflate"), Named::Unknown);
        assert_eq!(Encoding::configured(None).unwrap(), None);
        assert_eq!(
            Encoding::configured(Some("gzip")).unwrap(),
            Some(Encoding::Gzip)
        );
        assert!(Encoding::configured(Some("zstd")).is_err());
        assert!(!Encoding::Gzip.accepted_by("identity, snappy"));
    }

    #[test]
    fn a_bomb_stops_at_the_limit_and_garbage_is_an_error() {
        // 8 MiB of zeros: far smaller compressed (snappy's ratio is the lowest, ~21).
        let zeros = vec![0u8; 8 << 20];
        for e in ALL {
            let bomb = e.compress(&zeros).unwrap();
            assert!(bomb.len() < 1 << 20, "{e:?}: {}", bomb.len());
            match e.decompress(&bomb, 1 << 20) {
                Err(TripleError::TooLarge { max, .. }) => assert_eq!(max, 1 << 20),
                other => panic!("{e:?}: {other:?}"),
            }
            assert!(matches!(
                e.decompress(b"\x01\x02not compressed at all", 0),
                Err(TripleError::Decompression { .. })
            ));
        }
    }
}
