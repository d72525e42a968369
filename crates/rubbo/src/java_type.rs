//! `JavaType`: which Java type a Rust type stands for on the wire.
//!
//! Dubbo finds the provider method by name *and* JVM parameter descriptors
//! (`Ljava/lang/String;I`), so a Rust service must declare, for every parameter, the
//! Java type the Java interface declares. [`JavaType`] gives that descriptor for a
//! Rust type, and the wire form where serde's default is not what Java expects
//! (`Vec<u8>` travels as a Hessian binary, i.e. `byte[]`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use rubbo_hessian2::{BigDecimal, BigInteger, Date, Value};
use serde::{Serialize, Serializer};

/// A Rust type that stands for a Java type: its JVM descriptor and its wire form.
///
/// | Rust | descriptor |
/// |---|---|
/// | `bool`, `i8`/`u8`, `i16`, `i32`, `i64`, `f32`, `f64`, `char` | `Z`, `B`, `S`, `I`, `J`, `F`, `D`, `C` |
/// | `Option<i32>` (any primitive) | its wrapper class, `Ljava/lang/Integer;` |
/// | `Option<T>` (other `T`) | same as `T` |
/// | `String`, `str` | `Ljava/lang/String;` |
/// | `Vec<u8>`, `Vec<i8>`, `[u8]` | `[B` (sent as a Hessian binary) |
/// | `Vec<T>`, `[T]` | `Ljava/util/List;` |
/// | `HashMap`, `BTreeMap` | `Ljava/util/Map;` |
/// | `HashSet`, `BTreeSet` | `Ljava/util/Set;` |
/// | [`Date`], [`BigDecimal`], [`BigInteger`] | `Ljava/util/Date;`, `Ljava/math/BigDecimal;`, `Ljava/math/BigInteger;` |
/// | [`Value`] | `Ljava/lang/Object;` |
/// | `&T`, `Box<T>` | same as `T` |
/// | `()` | `V` (a `void` return) |
///
/// Your own types name their Java class with the derive, which reads
/// `#[java(class = "..")]` or else the serde rename:
///
/// ```
/// use rubbo::JavaType;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, JavaType)]
/// #[serde(rename = "org.rubbo.interop.Address")]
/// struct Address {
///     city: String,
/// }
///
/// #[derive(Serialize, Deserialize, JavaType)]
/// #[java(class = "org.rubbo.interop.Point")]
/// struct Point {
///     x: i32,
/// }
///
/// assert_eq!(Address::DESCRIPTOR, "Lorg/rubbo/interop/Address;");
/// assert_eq!(<Option<Point>>::DESCRIPTOR, "Lorg/rubbo/interop/Point;");
/// assert_eq!(<Option<i32>>::DESCRIPTOR, "Ljava/lang/Integer;");
/// assert_eq!(<Vec<u8>>::DESCRIPTOR, "[B");
/// ```
///
/// By hand, only [`DESCRIPTOR`](Self::DESCRIPTOR) is required:
///
/// ```
/// #[derive(serde::Serialize)]
/// struct Money(i64);
/// impl rubbo::JavaType for Money {
///     const DESCRIPTOR: &'static str = "Ljava/lang/Long;";
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no Java type (rubbo::JavaType)",
    label = "no Java type for this",
    note = "derive it: `#[derive(rubbo::JavaType)] #[java(class = \"com.example.Foo\")]`, \
            or give the parameter its descriptor: `#[rubbo(java = \"Lcom/example/Foo;\")]`"
)]
pub trait JavaType: Serialize {
    /// The JVM descriptor of the Java type (`I`, `Ljava/lang/String;`, `[B`).
    const DESCRIPTOR: &'static str;

    /// The descriptor when the value may be `null` (in an `Option`): a primitive names
    /// its wrapper class (`I` becomes `Ljava/lang/Integer;`); others are unchanged.
    const BOXED_DESCRIPTOR: &'static str = Self::DESCRIPTOR;

    /// The descriptor of a `Vec<Self>`: `Ljava/util/List;`, except `[B` for bytes.
    #[doc(hidden)]
    const LIST_DESCRIPTOR: &'static str = "Ljava/util/List;";

    /// Whether the value is Java `null` (`None`, `()`, `Value::Null`); a provider
    /// answers those with Dubbo's null-value response.
    fn is_java_null(&self) -> bool {
        false
    }

    /// Serializes the value in its Java wire form. The default is serde's; override it
    /// only for a type whose Java form differs.
    fn serialize_java<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize(serializer)
    }

    /// Serializes a slice of values (the body of a `Vec<Self>`): a list by default,
    /// a binary for bytes.
    #[doc(hidden)]
    fn serialize_java_list<S: Serializer>(items: &[Self], serializer: S) -> Result<S::Ok, S::Error>
    where
        Self: Sized,
    {
        serializer.collect_seq(items.iter().map(Java))
    }
}

/// Serializes a [`JavaType`] in its Java wire form (what generated code sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Java<T>(pub T);

impl<T: JavaType> Serialize for Java<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_java(serializer)
    }
}

macro_rules! primitive {
    ($($ty:ty => $desc:literal, $boxed:literal;)*) => {$(
        impl JavaType for $ty {
            const DESCRIPTOR: &'static str = $desc;
            const BOXED_DESCRIPTOR: &'static str = $boxed;
        }
    )*};
}

primitive! {
    bool => "Z", "Ljava/lang/Boolean;";
    i16 => "S", "Ljava/lang/Short;";
    i32 => "I", "Ljava/lang/Integer;";
    i64 => "J", "Ljava/lang/Long;";
    f32 => "F", "Ljava/lang/Float;";
    f64 => "D", "Ljava/lang/Double;";
    char => "C", "Ljava/lang/Character;";
}

impl JavaType for u8 {
    const DESCRIPTOR: &'static str = "B";
    const BOXED_DESCRIPTOR: &'static str = "Ljava/lang/Byte;";
    const LIST_DESCRIPTOR: &'static str = "[B";

    fn serialize_java_list<S: Serializer>(
        items: &[Self],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(items)
    }
}

impl JavaType for i8 {
    const DESCRIPTOR: &'static str = "B";
    const BOXED_DESCRIPTOR: &'static str = "Ljava/lang/Byte;";
    const LIST_DESCRIPTOR: &'static str = "[B";

    fn serialize_java_list<S: Serializer>(
        items: &[Self],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = items.iter().map(|b| b.to_ne_bytes()[0]).collect();
        serializer.serialize_bytes(&bytes)
    }
}

macro_rules! class {
    ($($ty:ty => $desc:literal;)*) => {$(
        impl JavaType for $ty {
            const DESCRIPTOR: &'static str = $desc;
        }
    )*};
}

class! {
    String => "Ljava/lang/String;";
    str => "Ljava/lang/String;";
    Date => "Ljava/util/Date;";
    BigDecimal => "Ljava/math/BigDecimal;";
    BigInteger => "Ljava/math/BigInteger;";
}

impl JavaType for Value {
    const DESCRIPTOR: &'static str = "Ljava/lang/Object;";

    fn is_java_null(&self) -> bool {
        self.is_null()
    }
}

impl JavaType for () {
    const DESCRIPTOR: &'static str = "V";

    fn is_java_null(&self) -> bool {
        true
    }
}

impl<T: JavaType> JavaType for Option<T> {
    const DESCRIPTOR: &'static str = T::BOXED_DESCRIPTOR;

    fn is_java_null(&self) -> bool {
        self.as_ref().is_none_or(T::is_java_null)
    }

    fn serialize_java<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Some(v) => serializer.serialize_some(&Java(v)),
            None => serializer.serialize_none(),
        }
    }
}

impl<T: JavaType> JavaType for Vec<T> {
    const DESCRIPTOR: &'static str = T::LIST_DESCRIPTOR;

    fn serialize_java<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        T::serialize_java_list(self, serializer)
    }
}

impl<T: JavaType> JavaType for [T] {
    const DESCRIPTOR: &'static str = T::LIST_DESCRIPTOR;

    fn serialize_java<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        T::serialize_java_list(self, serializer)
    }
}

macro_rules! forward {
    ($($ty:ty),*) => {$(
        impl<T: JavaType + ?Sized> JavaType for $ty {
            const DESCRIPTOR: &'static str = T::DESCRIPTOR;
            const BOXED_DESCRIPTOR: &'static str = T::BOXED_DESCRIPTOR;

            fn is_java_null(&self) -> bool {
                (**self).is_java_null()
            }

            fn serialize_java<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                (**self).serialize_java(serializer)
            }
        }
    )*};
}

forward!(&T, Box<T>);

impl<K: Serialize, V: JavaType, H> JavaType for HashMap<K, V, H> {
    const DESCRIPTOR: &'static str = "Ljava/util/Map;";

    fn serialize_java<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter().map(|(k, v)| (k, Java(v))))
    }
}

impl<K: Serialize, V: JavaType> JavaType for BTreeMap<K, V> {
    const DESCRIPTOR: &'static str = "Ljava/util/Map;";

    fn serialize_java<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter().map(|(k, v)| (k, Java(v))))
    }
}

impl<T: Serialize, H> JavaType for HashSet<T, H> {
    const DESCRIPTOR: &'static str = "Ljava/util/Set;";
}

impl<T: Serialize> JavaType for BTreeSet<T> {
    const DESCRIPTOR: &'static str = "Ljava/util/Set;";
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc<T: JavaType + ?Sized>() -> &'static str {
        T::DESCRIPTOR
    }

    #[test]
    fn descriptors_follow_java_declarations() {
        assert_eq!(desc::<i32>(), "I");
        assert_eq!(desc::<Option<i32>>(), "Ljava/lang/Integer;");
        assert_eq!(desc::<Option<bool>>(), "Ljava/lang/Boolean;");
        assert_eq!(desc::<Option<String>>(), "Ljava/lang/String;");
        assert_eq!(desc::<&str>(), "Ljava/lang/String;");
        assert_eq!(desc::<Vec<u8>>(), "[B");
        assert_eq!(desc::<Option<Vec<u8>>>(), "[B");
        assert_eq!(desc::<[u8]>(), "[B");
        assert_eq!(desc::<Vec<String>>(), "Ljava/util/List;");
        assert_eq!(desc::<Vec<Vec<u8>>>(), "Ljava/util/List;");
        assert_eq!(desc::<HashMap<String, i32>>(), "Ljava/util/Map;");
        assert_eq!(desc::<BTreeSet<i64>>(), "Ljava/util/Set;");
        assert_eq!(desc::<Value>(), "Ljava/lang/Object;");
        assert_eq!(desc::<Box<Date>>(), "Ljava/util/Date;");
    }

    #[test]
    fn bytes_travel_as_binary_and_lists_as_lists() {
        let bytes = rubbo_hessian2::to_vec(&Java(vec![1u8, 2, 3])).unwrap();
        assert_eq!(bytes, [0x23, 1, 2, 3]);
        let signed = rubbo_hessian2::to_vec(&Java(vec![-1i8])).unwrap();
        assert_eq!(signed, [0x21, 0xff]);
        let nested = rubbo_hessian2::to_vec(&Java(Some(vec![Some(vec![7u8])]))).unwrap();
        assert_eq!(rubbo_hessian2::decode_value(&nested).unwrap(), {
            let inner = Value::Binary(vec![7]);
            rubbo_hessian2::from_value::<Value>(Value::List(rubbo_hessian2::List {
                type_name: None,
                items: vec![inner],
            }))
            .unwrap()
        });
        let map = HashMap::from([("k".to_owned(), vec![9u8])]);
        let v = rubbo_hessian2::decode_value(&rubbo_hessian2::to_vec(&Java(map)).unwrap()).unwrap();
        let Value::Map(m) = v else {
            panic!("not a map: {v:?}")
        };
        assert_eq!(m.entries[0].1, Value::Binary(vec![9]));
    }

    #[test]
    fn nulls() {
        assert!(().is_java_null());
        assert!(None::<i32>.is_java_null());
        assert!(Some(Value::Null).is_java_null());
        assert!(!Some(0).is_java_null());
        assert!(!String::new().is_java_null());
    }
}
