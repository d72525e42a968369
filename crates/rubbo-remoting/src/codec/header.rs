//! The 16-byte Dubbo frame header.

use bytes::BufMut;

use super::DecodeError;

/// Magic number at offset 0 of every frame.
pub const MAGIC: u16 = 0xdabb;
/// Header length in bytes.
pub const HEADER_LEN: usize = 16;
/// Flag bit: the frame is a request.
pub const FLAG_REQUEST: u8 = 0x80;
/// Flag bit: the request expects a response (never set on responses).
pub const FLAG_TWOWAY: u8 = 0x40;
/// Flag bit: the frame is an event (heartbeat or readonly).
pub const FLAG_EVENT: u8 = 0x20;
/// Mask of the serialization id in the flag byte.
pub const SERIALIZATION_MASK: u8 = 0x1f;
/// Serialization id of hessian2, Dubbo's default.
pub const HESSIAN2: u8 = 2;

/// A decoded frame header (everything but the magic).
///
/// ```
/// use rubbo_remoting::Header;
/// let raw = [0xda, 0xbb, 0xe2, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1];
/// let h = Header::decode(&raw).unwrap().unwrap();
/// assert!(h.is_request() && h.is_two_way() && h.is_event());
/// assert_eq!((h.id, h.body_len, h.serialization()), (7, 1, 2));
/// assert_eq!(h.to_bytes(), raw);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Flag byte: [`FLAG_REQUEST`], [`FLAG_TWOWAY`], [`FLAG_EVENT`], serialization id.
    pub flag: u8,
    /// Status byte; `0` in requests.
    pub status: u8,
    /// Request id; a response echoes its request's id.
    pub id: i64,
    /// Body length in bytes (signed on the wire).
    pub body_len: i32,
}

impl Header {
    /// Parses the first 16 bytes of `src`; `Ok(None)` when fewer are available.
    pub fn decode(src: &[u8]) -> Result<Option<Header>, DecodeError> {
        let Some(h) = src.get(..HEADER_LEN) else {
            return Ok(None);
        };
        let magic = u16::from_be_bytes([h[0], h[1]]);
        if magic != MAGIC {
            return Err(DecodeError::BadMagic { found: magic });
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&h[4..12]);
        let mut len = [0u8; 4];
        len.copy_from_slice(&h[12..16]);
        Ok(Some(Header {
            flag: h[2],
            status: h[3],
            id: i64::from_be_bytes(id),
            body_len: i32::from_be_bytes(len),
        }))
    }

    /// Writes the 16 header bytes.
    pub fn encode<B: BufMut>(&self, dst: &mut B) {
        dst.put_u16(MAGIC);
        dst.put_u8(self.flag);
        dst.put_u8(self.status);
        dst.put_i64(self.id);
        dst.put_i32(self.body_len);
    }

    /// The 16 header bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        let mut dst = &mut out[..];
        self.encode(&mut dst);
        out
    }

    /// `true` when [`FLAG_REQUEST`] is set.
    pub fn is_request(&self) -> bool {
        self.flag & FLAG_REQUEST != 0
    }

    /// `true` when [`FLAG_TWOWAY`] is set.
    pub fn is_two_way(&self) -> bool {
        self.flag & FLAG_TWOWAY != 0
    }

    /// `true` when [`FLAG_EVENT`] is set.
    pub fn is_event(&self) -> bool {
        self.flag & FLAG_EVENT != 0
    }

    /// The serialization id (low 5 bits of the flag).
    pub fn serialization(&self) -> u8 {
        self.flag & SERIALIZATION_MASK
    }
}
