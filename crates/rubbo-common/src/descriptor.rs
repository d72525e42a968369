//! JVM parameter descriptors (`Ljava/lang/String;I[B`): counting and converting.

/// The descriptor of `$invoke(String method, String[] types, Object[] args)`.
pub const GENERIC_DESC: &str = "Ljava/lang/String;[Ljava/lang/String;[Ljava/lang/Object;";
/// The descriptor of `$echo(Object)`.
pub const ECHO_DESC: &str = "Ljava/lang/Object;";

/// The number of parameters in a concatenated descriptor, or `None` when malformed.
///
/// ```
/// use rubbo_common::descriptor::count;
/// assert_eq!(count(""), Some(0));
/// assert_eq!(count("Ljava/lang/String;I[B[[Ljava/util/List;J"), Some(5));
/// assert_eq!(count("Ljava/lang/String"), None);
/// ```
pub fn count(desc: &str) -> Option<usize> {
    let b = desc.as_bytes();
    let mut i = 0;
    let mut n = 0;
    while i < b.len() {
        while b.get(i) == Some(&b'[') {
            i += 1;
        }
        match b.get(i)? {
            b'Z' | b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' => i += 1,
            b'L' => {
                let end = b[i..].iter().position(|&c| c == b';')?;
                i += end + 1;
            }
            _ => return None,
        }
        n += 1;
    }
    Some(n)
}

/// Java's `ReflectUtils.name2desc`: a class name as written by `Class.getName()` or in
/// source form (`int`, `java.lang.String`, `java.lang.String[]`, `[Ljava.lang.String;`)
/// to its descriptor. Used to turn `$invoke` parameter types into a method descriptor.
///
/// ```
/// use rubbo_common::descriptor::name_to_desc;
/// assert_eq!(name_to_desc("int"), "I");
/// assert_eq!(name_to_desc("java.lang.String"), "Ljava/lang/String;");
/// assert_eq!(name_to_desc("java.lang.String[]"), "[Ljava/lang/String;");
/// assert_eq!(name_to_desc("[Ljava.lang.String;"), "[Ljava/lang/String;");
/// assert_eq!(name_to_desc("[I"), "[I");
/// ```
pub fn name_to_desc(name: &str) -> String {
    if name.starts_with('[') {
        return name.replace('.', "/");
    }
    let mut base = name;
    let mut dims = 0;
    while let Some(stripped) = base.strip_suffix("[]") {
        base = stripped;
        dims += 1;
    }
    let mut out = "[".repeat(dims);
    match base {
        "void" => out.push('V'),
        "boolean" => out.push('Z'),
        "byte" => out.push('B'),
        "char" => out.push('C'),
        "double" => out.push('D'),
        "float" => out.push('F'),
        "int" => out.push('I'),
        "long" => out.push('J'),
        "short" => out.push('S'),
        other => {
            out.push('L');
            out.push_str(&other.replace('.', "/"));
            out.push(';');
        }
    }
    out
}

/// The inverse of [`name_to_desc`] for one descriptor: the `Class.getName()` form.
///
/// ```
/// use rubbo_common::descriptor::split_names;
/// assert_eq!(split_names("Ljava/lang/String;I[B"), Some(vec![
///     "java.lang.String".to_owned(), "int".to_owned(), "[B".to_owned()]));
/// ```
pub fn split_names(desc: &str) -> Option<Vec<String>> {
    let b = desc.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let start = i;
        while b.get(i) == Some(&b'[') {
            i += 1;
        }
        let array = i > start;
        let prim = |c: u8| match c {
            b'Z' => Some("boolean"),
            b'B' => Some("byte"),
            b'C' => Some("char"),
            b'D' => Some("double"),
            b'F' => Some("float"),
            b'I' => Some("int"),
            b'J' => Some("long"),
            b'S' => Some("short"),
            _ => None,
        };
        let c = *b.get(i)?;
        if c == b'L' {
            let end = i + b[i..].iter().position(|&c| c == b';')?;
            if array {
                out.push(desc[start..=end].replace('/', "."));
            } else {
                out.push(desc[i + 1..end].replace('/', "."));
            }
            i = end + 1;
        } else {
            let p = prim(c)?;
            out.push(if array {
                desc[start..=i].to_owned()
            } else {
                p.to_owned()
            });
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_descriptors_count() {
        for (d, n) in [
            ("Ljava/lang/String;", 1),
            ("I", 1),
            ("", 0),
            ("Ljava/util/Map;", 1),
            ("Lorg/rubbo/interop/User;", 1),
            (GENERIC_DESC, 3),
            ("[[I[Ljava/lang/Object;Z", 3),
        ] {
            assert_eq!(count(d), Some(n), "{d}");
        }
        assert_eq!(count("Q"), None);
        assert_eq!(count("["), None);
    }

    #[test]
    fn names_round_trip_through_descriptors() {
        for n in [
            "int",
            "java.lang.String",
            "[Ljava.lang.String;",
            "[I",
            "org.rubbo.interop.User",
        ] {
            let d = name_to_desc(n);
            assert_eq!(split_names(&d).unwrap(), vec![n.to_owned()], "{n} -> {d}");
        }
    }
}
