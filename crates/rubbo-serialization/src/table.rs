//! The serializations by name and by dubbo wire id.

use std::fmt;
use std::sync::Arc;

use rubbo_common::keys::{self, defaults};
use rubbo_common::serialization::Serialization;
use rubbo_common::{ExtensionError, ExtensionTable, Url};

use crate::hessian2::HESSIAN2;

/// Dubbo wire ids are the low 5 bits of the header's flag byte.
const IDS: usize = 32;

/// The built-in serialization with dubbo wire id `id`, if any (for codecs that read a
/// frame header without a table at hand).
///
/// ```
/// assert_eq!(rubbo_serialization::builtin_by_id(2).map(|s| s.name()), Some("hessian2"));
/// assert!(rubbo_serialization::builtin_by_id(23).is_none());
/// ```
pub fn builtin_by_id(id: u8) -> Option<&'static dyn Serialization> {
    match id {
        2 => Some(&HESSIAN2),
        _ => None,
    }
}

/// The serialization extension table: by name, as the URL key `serialization` selects
/// (default `hessian2`), and by dubbo wire id, as a frame header names one.
///
/// [`Default`] holds the built-ins; [`register`](Self::register) adds (or replaces)
/// one, under its [`name`](Serialization::name) and [`id`](Serialization::id).
/// Entries are `&'static` because [`Encoded`](rubbo_common::Encoded) refers to
/// serializations that way (see there); the by-name part is an ordinary
/// [`ExtensionTable`].
///
/// ```
/// use rubbo_common::Url;
/// use rubbo_serialization::{HESSIAN2, Serializations};
///
/// let table = Serializations::default();
/// let url = Url::parse("dubbo://h:1/S").unwrap();
/// assert_eq!(table.select(&url).unwrap().name(), "hessian2"); // the default
/// assert_eq!(table.by_id(2).unwrap().name(), "hessian2");
/// assert!(table.by_id(23).is_none());
/// let err = table.select(&Url::parse("dubbo://h:1/S?serialization=fastjson2").unwrap());
/// assert_eq!(
///     err.unwrap_err().to_string(),
///     "no serialization extension named \"fastjson2\" (known: hessian2)"
/// );
/// ```
#[derive(Clone)]
pub struct Serializations {
    names: ExtensionTable<&'static dyn Serialization>,
    ids: [Option<&'static dyn Serialization>; IDS],
}

impl fmt::Debug for Serializations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Serializations")
            .field("names", &self.names.names())
            .field(
                "ids",
                &self
                    .ids
                    .iter()
                    .flatten()
                    .map(|s| (s.id(), s.name()))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Default for Serializations {
    /// The built-ins: `hessian2`, the default.
    fn default() -> Self {
        Self::empty().with(&HESSIAN2)
    }
}

impl Serializations {
    /// A table with no serialization (its default name is still `hessian2`).
    pub fn empty() -> Self {
        Serializations {
            names: ExtensionTable::new("serialization", defaults::SERIALIZATION),
            ids: [None; IDS],
        }
    }

    /// Registers `serialization` under its name and, when it fits the dubbo header's 5
    /// bits, its wire id (replacing what was there).
    pub fn register(&mut self, serialization: &'static dyn Serialization) -> &mut Self {
        self.names
            .register(serialization.name(), Arc::new(serialization));
        if let Some(slot) = self.ids.get_mut(usize::from(serialization.id())) {
            *slot = Some(serialization);
        }
        self
    }

    /// Builder-style [`register`](Self::register).
    pub fn with(mut self, serialization: &'static dyn Serialization) -> Self {
        self.register(serialization);
        self
    }

    /// The serialization called `name`; an unknown name is an error listing the known
    /// ones.
    pub fn get(&self, name: &str) -> Result<&'static dyn Serialization, ExtensionError> {
        self.names.get(name).map(|s| *s)
    }

    /// The serialization `url` names with `serialization=`, or the default.
    pub fn select(&self, url: &Url) -> Result<&'static dyn Serialization, ExtensionError> {
        self.names.select(url, keys::SERIALIZATION_KEY).map(|s| *s)
    }

    /// The serialization with dubbo wire id `id`.
    pub fn by_id(&self, id: u8) -> Option<&'static dyn Serialization> {
        self.ids.get(usize::from(id)).copied().flatten()
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.names.names()
    }

    /// The by-name table.
    pub fn table(&self) -> &ExtensionTable<&'static dyn Serialization> {
        &self.names
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use rubbo_common::Value;
    use rubbo_common::serialization::{DeserializeFn, SerializationError};

    use super::*;

    /// A serialization registered by a user (it cannot do anything).
    struct Custom;

    static CUSTOM: Custom = Custom;

    impl Serialization for Custom {
        fn name(&self) -> &'static str {
            "custom"
        }
        fn id(&self) -> u8 {
            31
        }
        fn content_type(&self) -> &'static str {
            "application/x-custom"
        }
        fn read_values(&self, _: &[u8], _: usize) -> Result<Vec<Value>, SerializationError> {
            Err(SerializationError::read("custom", "unsupported"))
        }
        fn deserialize<'de>(
            &self,
            _: &'de [u8],
            _: &mut DeserializeFn<'_, 'de>,
        ) -> Result<(), SerializationError> {
            Err(SerializationError::read("custom", "unsupported"))
        }
        fn deserialize_values<'de>(
            &self,
            _: &'de [u8],
            _: usize,
            _: &mut DeserializeFn<'_, 'de>,
        ) -> Result<(), SerializationError> {
            Err(SerializationError::read("custom", "unsupported"))
        }
        fn write_value(&self, _: &Value, _: &mut BytesMut) -> Result<(), SerializationError> {
            Err(SerializationError::write("custom", "unsupported"))
        }
        fn write(
            &self,
            _: &dyn erased_serde::Serialize,
            _: &mut BytesMut,
        ) -> Result<(), SerializationError> {
            Err(SerializationError::write("custom", "unsupported"))
        }
        fn write_values(
            &self,
            _: &dyn erased_serde::Serialize,
            _: &mut BytesMut,
        ) -> Result<(), SerializationError> {
            Err(SerializationError::write("custom", "unsupported"))
        }
    }

    #[test]
    fn hessian2_by_name_by_id_and_by_default() {
        let t = Serializations::default();
        let h = t.get("hessian2").unwrap();
        assert_eq!(
            (h.name(), h.id(), h.content_type()),
            ("hessian2", 2, "x-application/hessian2")
        );
        assert!(std::ptr::addr_eq(h, &HESSIAN2));
        assert!(std::ptr::addr_eq(t.by_id(2).unwrap(), h));
        let url = |q: &str| Url::parse(&format!("dubbo://127.0.0.1:1/S{q}")).unwrap();
        assert_eq!(t.select(&url("")).unwrap().name(), "hessian2");
        assert_eq!(
            t.select(&url("?serialization=")).unwrap().name(),
            "hessian2"
        );
        assert_eq!(t.select(&url("?serialization=hessian2")).unwrap().id(), 2);
        assert_eq!(t.names(), vec!["hessian2".to_owned()]);
        assert!(t.by_id(0).is_none() && t.by_id(23).is_none() && t.by_id(200).is_none());
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let t = Serializations::default().with(&CUSTOM);
        let err = t.get("kryo").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no serialization extension named \"kryo\" (known: custom, hessian2)"
        );
        let url = Url::parse("dubbo://127.0.0.1:1/S?serialization=fst").unwrap();
        assert!(t.select(&url).unwrap_err().to_string().contains("\"fst\""));
        assert!(Serializations::empty().get("hessian2").is_err());
    }

    #[test]
    fn registered_serializations_are_found_by_name_and_id() {
        let t = Serializations::default().with(&CUSTOM);
        assert_eq!(t.get("custom").unwrap().id(), 31);
        assert_eq!(t.by_id(31).unwrap().name(), "custom");
        assert_eq!(t.by_id(2).unwrap().name(), "hessian2");
        let debug = format!("{t:?}");
        assert!(debug.contains("(31, \"custom\")"), "{debug}");
    }
}
