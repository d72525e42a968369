//! Tag bytes of the Hessian 2.0 grammar (see the wire reference, section 3.1).

pub(crate) const NULL: u8 = b'N';
pub(crate) const TRUE: u8 = b'T';
pub(crate) const FALSE: u8 = b'F';
pub(crate) const INT: u8 = b'I';
pub(crate) const LONG: u8 = b'L';
pub(crate) const LONG_INT: u8 = 0x59;
pub(crate) const DOUBLE: u8 = b'D';
pub(crate) const DOUBLE_ZERO: u8 = 0x5b;
pub(crate) const DOUBLE_ONE: u8 = 0x5c;
pub(crate) const DOUBLE_BYTE: u8 = 0x5d;
pub(crate) const DOUBLE_SHORT: u8 = 0x5e;
pub(crate) const DOUBLE_MILL: u8 = 0x5f;
pub(crate) const DATE: u8 = 0x4a;
pub(crate) const DATE_MINUTE: u8 = 0x4b;
pub(crate) const STRING_CHUNK: u8 = b'R';
pub(crate) const STRING_FINAL: u8 = b'S';
pub(crate) const BINARY_CHUNK: u8 = b'A';
pub(crate) const BINARY_FINAL: u8 = b'B';
pub(crate) const LIST_VAR_TYPED: u8 = 0x55;
pub(crate) const LIST_FIXED_TYPED: u8 = b'V';
pub(crate) const LIST_VAR: u8 = 0x57;
pub(crate) const LIST_FIXED: u8 = 0x58;
pub(crate) const LIST_SHORT_TYPED: u8 = 0x70;
pub(crate) const LIST_SHORT: u8 = 0x78;
pub(crate) const MAP: u8 = b'H';
pub(crate) const MAP_TYPED: u8 = b'M';
pub(crate) const CLASS_DEF: u8 = b'C';
pub(crate) const OBJECT: u8 = b'O';
pub(crate) const OBJECT_SHORT: u8 = 0x60;
pub(crate) const REF: u8 = b'Q';
pub(crate) const END: u8 = b'Z';

/// What kind of value a tag starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Null,
    Bool,
    Int,
    Long,
    Double,
    Date,
    String,
    Binary,
    List,
    Map,
    Object,
    ClassDef,
    Ref,
    Invalid,
}

pub(crate) fn kind(tag: u8) -> Kind {
    match tag {
        NULL => Kind::Null,
        TRUE | FALSE => Kind::Bool,
        0x80..=0xd7 | INT => Kind::Int,
        0xd8..=0xff | 0x38..=0x3f | LONG_INT | LONG => Kind::Long,
        DOUBLE_ZERO..=DOUBLE_MILL | DOUBLE => Kind::Double,
        DATE | DATE_MINUTE => Kind::Date,
        0x00..=0x1f | 0x30..=0x33 | STRING_CHUNK | STRING_FINAL => Kind::String,
        0x20..=0x2f | 0x34..=0x37 | BINARY_CHUNK | BINARY_FINAL => Kind::Binary,
        LIST_VAR_TYPED | LIST_FIXED_TYPED | LIST_VAR | LIST_FIXED | 0x70..=0x7f => Kind::List,
        MAP | MAP_TYPED => Kind::Map,
        OBJECT | 0x60..=0x6f => Kind::Object,
        CLASS_DEF => Kind::ClassDef,
        REF => Kind::Ref,
        _ => Kind::Invalid,
    }
}
