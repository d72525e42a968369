//! Java's `.properties` syntax (`java.util.Properties.load`), hand-written: no crate
//! on crates.io follows Java's rules (key terminators `=`, `:` or white space, `#`/`!`
//! comments, odd trailing backslashes continuing a line, `\uXXXX` and the other
//! escapes) closely enough.
//!
//! One difference: the text is read as UTF-8 (Java's `load(InputStream)` reads
//! ISO-8859-1), so non-ASCII values need no `\u` escapes.

/// One `key = value` pair and the 1-based line its logical line starts on.
pub(crate) type Pair = (String, String, usize);

/// Parses properties text; an error is `(line, message)`.
pub(crate) fn parse(text: &str) -> Result<Vec<Pair>, (usize, String)> {
    let lines = natural_lines(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let start = i;
        let first = lines[i].trim_start_matches([' ', '\t', '\x0c']);
        i += 1;
        if first.is_empty() || first.starts_with('#') || first.starts_with('!') {
            continue;
        }
        // Join continuation lines (odd number of trailing backslashes).
        let mut logical = String::from(first);
        while ends_with_odd_backslashes(&logical) {
            logical.pop();
            match lines.get(i) {
                Some(next) => {
                    logical.push_str(next.trim_start_matches([' ', '\t', '\x0c']));
                    i += 1;
                }
                None => break,
            }
        }
        let line_no = start + 1;
        let (key, value) = split_key_value(&logical);
        let key = unescape(key).map_err(|m| (line_no, m))?;
        let value = unescape(value).map_err(|m| (line_no, m))?;
        out.push((key, value, line_no));
    }
    Ok(out)
}

/// Lines ended by `\n`, `\r` or `\r\n`.
fn natural_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find(['\n', '\r']) {
            Some(pos) => {
                lines.push(&rest[..pos]);
                let skip = if rest[pos..].starts_with("\r\n") {
                    2
                } else {
                    1
                };
                rest = &rest[pos + skip..];
            }
            None => {
                lines.push(rest);
                rest = "";
            }
        }
    }
    lines
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 1
}

/// Splits at the first unescaped `=`, `:` or white space; white space and one `=`
/// or `:` after the key are skipped.
fn split_key_value(line: &str) -> (&str, &str) {
    let bytes = line.as_bytes();
    let mut end = bytes.len();
    let mut escaped = false;
    for (i, b) in bytes.iter().enumerate() {
        if escaped {
            escaped = false;
            continue;
        }
        match b {
            b'\\' => escaped = true,
            b'=' | b':' | b' ' | b'\t' | b'\x0c' => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let key = &line[..end];
    let mut rest = line[end..].trim_start_matches([' ', '\t', '\x0c']);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches([' ', '\t', '\x0c']);
    }
    (key, rest)
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .ok_or_else(|| format!("malformed \\uxxxx escape: \\u{hex}"))?;
                // A surrogate pair is two escapes.
                out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn pairs(text: &str) -> Vec<(String, String, usize)> {
        parse(text).unwrap()
    }

    #[test]
    fn separators_comments_and_blank_lines() {
        let got = pairs("# comment\n! also a comment\n\na=1\nb : 2\nc 3\n  d=\ne\nf==x\ng:=y\n");
        let want = [
            ("a", "1", 4),
            ("b", "2", 5),
            ("c", "3", 6),
            ("d", "", 7),
            ("e", "", 8),
            ("f", "=x", 9),
            ("g", "=y", 10),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(k, v, l)| ((*k).to_owned(), (*v).to_owned(), *l))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn continuation_lines_join_and_keep_the_first_line_number() {
        let got = pairs("x=1\nfruits = apple, \\\n    banana, \\\n    pear\ny=2\n");
        assert_eq!(got[1], ("fruits".into(), "apple, banana, pear".into(), 2));
        assert_eq!(got[2], ("y".into(), "2".into(), 5));
        // An even number of backslashes does not continue.
        let got = pairs("p=a\\\\\nq=b\n");
        assert_eq!(got[0].1, "a\\");
        assert_eq!(got[1].0, "q");
    }

    #[test]
    fn escapes_in_keys_and_values() {
        let got = pairs("key\\ with\\:seps=tab\\there\\u0041\\z\r\nw=\\u00e9\r");
        assert_eq!(
            got[0],
            ("key with:seps".into(), "tab\there\u{41}z".into(), 1)
        );
        assert_eq!(got[1], ("w".into(), "é".into(), 2));
    }

    #[test]
    fn a_bad_unicode_escape_names_its_line() {
        let err = parse("a=1\nb=\\u12x4\n").unwrap_err();
        assert_eq!(err.0, 2);
        assert!(err.1.contains("\\uxxxx"), "{}", err.1);
    }
}
