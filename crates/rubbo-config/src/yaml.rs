//! YAML to flat keys with line numbers, through `yaml-rust2`'s event parser (its
//! markers carry the lines; `serde_yaml` is unmaintained).
//!
//! Mappings join their keys with `.` (so both nested `dubbo: {registry: {address:
//! ..}}` and Spring's flat `dubbo.registry.address: ..` give `dubbo.registry.address`),
//! a sequence of scalars becomes one comma-separated value (as Dubbo reads lists),
//! and a mapping inside a sequence is `key[i].sub`. Nulls (`~`, `null`, nothing) are
//! absent. Several documents (`---`) merge, later ones winning.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// One flattened `key = value` and the 1-based line of its value.
pub(crate) type Pair = (String, String, usize);

enum Frame {
    Mapping {
        prefix: String,
        key: Option<String>,
    },
    Sequence {
        prefix: String,
        index: usize,
        scalars: Vec<String>,
        line: usize,
    },
}

#[derive(Default)]
struct Flattener {
    stack: Vec<Frame>,
    out: Vec<Pair>,
    error: Option<(usize, String)>,
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

impl Flattener {
    /// The prefix of a new collection opened where the parser is now.
    fn child_prefix(&mut self) -> Option<String> {
        match self.stack.last_mut() {
            None => Some(String::new()),
            Some(Frame::Mapping { prefix, key }) => key.take().map(|k| join(prefix, &k)),
            Some(Frame::Sequence { prefix, index, .. }) => {
                let p = format!("{prefix}[{index}]");
                *index += 1;
                Some(p)
            }
        }
    }
}

impl MarkedEventReceiver for Flattener {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        let line = mark.line();
        match ev {
            Event::DocumentStart | Event::DocumentEnd => self.stack.clear(),
            Event::MappingStart(..) => match self.child_prefix() {
                Some(prefix) => self.stack.push(Frame::Mapping { prefix, key: None }),
                None => self.error = Some((line, "a mapping cannot be a key".into())),
            },
            Event::SequenceStart(..) => match self.child_prefix() {
                Some(prefix) => self.stack.push(Frame::Sequence {
                    prefix,
                    index: 0,
                    scalars: Vec::new(),
                    line,
                }),
                None => self.error = Some((line, "a sequence cannot be a key".into())),
            },
            Event::MappingEnd => {
                self.stack.pop();
            }
            Event::SequenceEnd => {
                if let Some(Frame::Sequence {
                    prefix,
                    scalars,
                    line,
                    ..
                }) = self.stack.pop()
                {
                    if !scalars.is_empty() {
                        self.out.push((prefix, scalars.join(","), line));
                    }
                }
            }
            Event::Scalar(value, style, ..) => {
                let null = style == TScalarStyle::Plain
                    && matches!(value.as_str(), "" | "~" | "null" | "Null" | "NULL");
                match self.stack.last_mut() {
                    Some(Frame::Mapping { prefix, key }) => match key.take() {
                        None => *key = Some(value),
                        Some(k) if null => drop(k),
                        Some(k) => self.out.push((join(prefix, &k), value, line)),
                    },
                    Some(Frame::Sequence { scalars, index, .. }) => {
                        *index += 1;
                        if !null {
                            scalars.push(value);
                        }
                    }
                    None => {}
                }
            }
            Event::Alias(_) => {
                self.error = Some((line, "YAML aliases (*name) are not supported".into()));
            }
            _ => {}
        }
    }
}

/// Flattens YAML text; an error is `(line, message)`.
pub(crate) fn flatten(text: &str) -> Result<Vec<Pair>, (usize, String)> {
    let mut f = Flattener::default();
    Parser::new_from_str(text)
        .load(&mut f, true)
        .map_err(|e| (e.marker().line(), e.info().to_owned()))?;
    match f.error {
        Some(e) => Err(e),
        None => Ok(f.out),
    }
}

#[cfg(test)]
mod tests {
    use super::flatten;

    fn get<'a>(pairs: &'a [(String, String, usize)], key: &str) -> Option<(&'a str, usize)> {
        pairs
            .iter()
            .rev()
            .find(|(k, ..)| k == key)
            .map(|(_, v, l)| (v.as_str(), *l))
    }

    #[test]
    fn nested_and_flat_keys_with_lines() {
        let text = "\
spring:
  main: x
dubbo:
  application:
    name: demo   # a comment
  registries:
    r1:
      address: zookeeper://127.0.0.1:2181
  protocol.port: 20881
  references:
    org.example.Greeter:
      methods:
        hello:
          timeout: 250
  provider:
    filter: [a, b]
    listener:
      - x
      - y
    empty:
    quoted: \"null\"
";
        let p = flatten(text).unwrap();
        assert_eq!(get(&p, "dubbo.application.name"), Some(("demo", 5)));
        assert_eq!(
            get(&p, "dubbo.registries.r1.address"),
            Some(("zookeeper://127.0.0.1:2181", 8))
        );
        assert_eq!(get(&p, "dubbo.protocol.port"), Some(("20881", 9)));
        assert_eq!(
            get(
                &p,
                "dubbo.references.org.example.Greeter.methods.hello.timeout"
            ),
            Some(("250", 14))
        );
        assert_eq!(get(&p, "dubbo.provider.filter"), Some(("a,b", 16)));
        assert_eq!(get(&p, "dubbo.provider.listener"), Some(("x,y", 18)));
        assert_eq!(get(&p, "dubbo.provider.empty"), None);
        assert_eq!(get(&p, "dubbo.provider.quoted"), Some(("null", 21)));
        assert_eq!(get(&p, "spring.main"), Some(("x", 2)));
    }

    #[test]
    fn mappings_in_sequences_and_documents() {
        let p = flatten("a:\n  - n: 1\n  - n: 2\n---\nb: 3\n").unwrap();
        assert_eq!(get(&p, "a[0].n"), Some(("1", 2)));
        assert_eq!(get(&p, "a[1].n"), Some(("2", 3)));
        assert_eq!(get(&p, "b"), Some(("3", 5)));
    }

    #[test]
    fn syntax_errors_name_a_line() {
        let err = flatten("dubbo:\n  a: 1\n   b: [\n").unwrap_err();
        assert!(err.0 >= 3, "{err:?}");
        let err = flatten("x: &v 1\ny: *v\n").unwrap_err();
        assert_eq!(err.0, 2);
    }
}
