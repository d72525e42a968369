//! The condition expression grammar and its matching.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwapOption;

use rubbo_common::{Invocation, Url};
use tracing::{debug, warn};

use crate::ClusterError;
use crate::router::Candidates;
use crate::router::matching::{is_match_glob_pattern, java_string, url_value};

#[derive(Debug, Clone, PartialEq)]
enum Key {
    /// A URL field or parameter (`method` / `methods` read the invoked method in the
    /// when-part).
    Param(String),
    /// `arguments[N]`.
    Argument(Option<usize>),
    /// `attachments[key]`.
    Attachment(Option<String>),
}

#[derive(Debug, Clone)]
struct MatchPair {
    key: Key,
    matches: Vec<String>,
    mismatches: Vec<String>,
}

/// One `when => then` condition (Java's `ConditionStateRouter` rule).
///
/// - tokens: `&` (AND), `=` (match), `!=` (mismatch), `,` (another value);
/// - keys: URL fields and parameters, `method`, `arguments[N]`, `attachments[key]`;
///   `consumer.` / `provider.` prefixes are stripped;
/// - values: `*`, globs, `a~b` integer ranges, `$key` (the consumer URL's value);
/// - an empty or `true` when-part matches every call; an empty or `false` then-part
///   matches no provider (blacklist).
///
/// ```
/// use rubbo_cluster::router::Condition;
/// let c = Condition::parse("method = find*,list* & application != test => host = 10.0.0.*").unwrap();
/// assert_eq!(c.to_string(), "method = find*,list* & application != test => host = 10.0.0.*");
/// assert!(Condition::parse("= foo => host = 1").is_err());
/// ```
#[derive(Clone)]
pub struct Condition {
    raw: String,
    when: Vec<MatchPair>,
    then: Option<Vec<MatchPair>>,
    /// Then-part results per provider of the last directory snapshot (they depend only
    /// on the provider and consumer URLs).
    then_cache: Arc<ArcSwapOption<ThenCache>>,
}

struct ThenCache {
    snapshot: u64,
    consumer: Url,
    bits: Vec<bool>,
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Condition({})", self.raw)
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl Condition {
    /// Parses `when => then` (or a then-only rule without `=>`).
    pub fn parse(rule: &str) -> Result<Self, ClusterError> {
        let raw = rule.trim().to_owned();
        let stripped = raw.replace("consumer.", "").replace("provider.", "");
        let (when, then) = match stripped.find("=>") {
            Some(i) => (Some(stripped[..i].trim()), stripped[i + 2..].trim()),
            None => (None, stripped.trim()),
        };
        let when = match when {
            None | Some("") | Some("true") => Vec::new(),
            Some(w) => parse_expr(w, &raw)?,
        };
        let then = match then {
            "" | "false" => None,
            t => Some(parse_expr(t, &raw)?),
        };
        Ok(Condition {
            raw,
            when,
            then,
            then_cache: Arc::new(ArcSwapOption::empty()),
        })
    }

    /// Whether the when-part matches this call.
    pub fn matches_when(&self, consumer: &Url, invocation: &Invocation) -> bool {
        self.when.is_empty()
            || self
                .when
                .iter()
                .all(|p| p.is_match(consumer, None, Some(invocation), true))
    }

    /// Whether `provider` passes the then-part (`$key` values read `consumer`).
    pub fn matches_then(&self, provider: &Url, consumer: &Url) -> bool {
        match &self.then {
            None => false,
            Some(then) if then.is_empty() => false,
            Some(then) => then
                .iter()
                .all(|p| p.is_match(provider, Some(consumer), None, false)),
        }
    }

    /// Whether the then-part is absent (a blacklist: matching calls get no provider).
    pub fn is_blacklist(&self) -> bool {
        self.then.is_none()
    }

    /// Applies the condition: when the call matches, keeps the providers passing the
    /// then-part; an empty result is returned only if `force`, else the input.
    pub fn route<'a>(
        &self,
        candidates: Candidates<'a>,
        consumer: &Url,
        invocation: &Invocation,
        force: bool,
    ) -> Candidates<'a> {
        if candidates.is_empty() || !self.matches_when(consumer, invocation) {
            return candidates;
        }
        if self.then.is_none() {
            warn!(rule = %self.raw, consumer = %consumer.address(), "consumer is blacklisted by a condition rule");
            let mut empty = candidates;
            empty.clear();
            return empty;
        }
        let result = self.then_filter(&candidates, consumer);
        if !result.is_empty() {
            result
        } else if force {
            warn!(rule = %self.raw, method = invocation.method(), "condition rule filtered every provider (force=true)");
            result
        } else {
            debug!(rule = %self.raw, "condition rule matched no provider, ignored (force=false)");
            candidates
        }
    }

    /// The candidates passing the then-part, from the per-snapshot cache when the
    /// candidates come from a directory snapshot.
    pub(crate) fn then_filter<'a>(
        &self,
        candidates: &Candidates<'a>,
        consumer: &Url,
    ) -> Candidates<'a> {
        let Some(meta) = candidates.meta() else {
            return candidates.filtered(|p| self.matches_then(p.url(), consumer));
        };
        let cached = self.then_cache.load_full().filter(|c| {
            c.snapshot == meta.id
                && c.consumer.shares_params_with(consumer)
                && c.consumer == *consumer
        });
        let cache = match cached {
            Some(c) => c,
            None => {
                let bits = candidates
                    .all()
                    .iter()
                    .map(|p| self.matches_then(p.url(), consumer))
                    .collect();
                let c = Arc::new(ThenCache {
                    snapshot: meta.id,
                    consumer: consumer.clone(),
                    bits,
                });
                self.then_cache.store(Some(c.clone()));
                c
            }
        };
        candidates.filtered_indexed(|i, _| cache.bits[i])
    }

    pub(crate) fn then_is_empty(&self) -> bool {
        self.then.as_ref().is_none_or(|t| t.is_empty())
    }
}

/// Java's `ROUTE_PATTERN` `([&!=,]*)\s*([^&!=,\s]+)`, run over the text.
fn tokens(rule: &str) -> Vec<(&str, &str)> {
    let b = rule.as_bytes();
    let is_sep = |c: u8| matches!(c, b'&' | b'!' | b'=' | b',');
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // Leftmost match: a separator run (possibly empty), spaces, then content.
        let sep_start = i;
        let mut j = i;
        while j < b.len() && is_sep(b[j]) {
            j += 1;
        }
        let sep_end = j;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        let content_start = j;
        while j < b.len() && !is_sep(b[j]) && !b[j].is_ascii_whitespace() {
            j += 1;
        }
        if j > content_start {
            out.push((&rule[sep_start..sep_end], &rule[content_start..j]));
            i = j;
        } else {
            // No content follows this position: the regex finds the next match later.
            i = sep_start + 1;
        }
    }
    out
}

fn parse_expr(expr: &str, raw: &str) -> Result<Vec<MatchPair>, ClusterError> {
    let illegal = |reason: String| ClusterError::IllegalRule {
        rule: raw.to_owned(),
        reason,
    };
    let mut pairs: Vec<MatchPair> = Vec::new();
    let mut current: Option<usize> = None;
    // The list the last `=` / `!=` value went to (pair index, matches?). As in Java it
    // survives a new key, so `a = 1 & b , 2` adds 2 to a's values.
    let mut last: Option<(usize, bool)> = None;
    for (sep, content) in tokens(expr) {
        match sep {
            "" | "&" => {
                let key = parse_key(content);
                let existing = (sep == "&")
                    .then(|| pairs.iter().position(|p| p.key == key))
                    .flatten();
                let idx = match existing {
                    Some(i) => i,
                    None => {
                        // A key repeated without `&` replaces the earlier one (HashMap.put).
                        if pairs.iter().any(|p| p.key == key) {
                            pairs.retain(|p| p.key != key);
                            // Java's value list now belongs to a dropped pair.
                            last = None;
                        }
                        pairs.push(MatchPair {
                            key,
                            matches: Vec::new(),
                            mismatches: Vec::new(),
                        });
                        pairs.len() - 1
                    }
                };
                current = Some(idx);
            }
            "=" | "!=" => {
                let idx = current.ok_or_else(|| {
                    illegal(format!(
                        "illegal route rule, the value \"{content}\" has no key"
                    ))
                })?;
                let to_matches = sep == "=";
                let list = if to_matches {
                    &mut pairs[idx].matches
                } else {
                    &mut pairs[idx].mismatches
                };
                list.push(content.to_owned());
                last = Some((idx, to_matches));
            }
            "," => {
                let Some((idx, to_matches)) = last else {
                    return Err(illegal(format!(
                        "illegal route rule, \",\" before \"{content}\" has no value list"
                    )));
                };
                let list = if to_matches {
                    &mut pairs[idx].matches
                } else {
                    &mut pairs[idx].mismatches
                };
                list.push(content.to_owned());
            }
            other => {
                return Err(illegal(format!(
                    "unexpected separator \"{other}\" before \"{content}\""
                )));
            }
        }
    }
    Ok(pairs)
}

fn parse_key(key: &str) -> Key {
    if key.starts_with("arguments") {
        let first = key.split('.').next().unwrap_or("");
        let index = first
            .find("arguments[")
            .map(|i| &first[i + "arguments[".len()..])
            .and_then(|rest| rest.split_once(']'))
            .filter(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|(n, _)| n.parse().ok());
        return Key::Argument(index);
    }
    if key.starts_with("attachments") {
        let name = key
            .strip_prefix("attachments[")
            .and_then(|rest| rest.rfind(']').map(|i| &rest[..i]))
            .filter(|n| !n.is_empty())
            .map(str::to_owned);
        return Key::Attachment(name);
    }
    Key::Param(key.to_owned())
}

impl MatchPair {
    fn value<'u>(&self, url: &'u Url, invocation: Option<&Invocation>) -> Option<Cow<'u, str>> {
        match &self.key {
            Key::Param(k) => match invocation {
                Some(inv) if k == "method" || k == "methods" => {
                    Some(Cow::Owned(inv.method().to_owned()))
                }
                _ => url_value(url, k),
            },
            Key::Argument(i) => {
                let args = invocation?.arguments().as_values()?;
                args.get((*i)?).map(|v| Cow::Owned(java_string(v)))
            }
            Key::Attachment(name) => invocation?
                .attachment_str(name.as_deref()?)
                .map(|s| Cow::Owned(s.to_owned())),
        }
    }

    /// Java 3.x `AbstractConditionMatcher.isMatch`.
    fn is_match(
        &self,
        url: &Url,
        param: Option<&Url>,
        invocation: Option<&Invocation>,
        is_when: bool,
    ) -> bool {
        let Some(value) = self.value(url, invocation) else {
            return false;
        };
        let hit = |p: &String| pattern_match(p, &value, param, is_when);
        match (self.matches.is_empty(), self.mismatches.is_empty()) {
            (false, true) => self.matches.iter().any(hit),
            (true, false) => !self.mismatches.iter().any(hit),
            (false, false) => !self.mismatches.iter().any(hit) && self.matches.iter().any(hit),
            (true, true) => false,
        }
    }
}

/// Java's value patterns: a range (`~`) first, else a glob with `$` references.
fn pattern_match(pattern: &str, value: &str, param: Option<&Url>, is_when: bool) -> bool {
    if pattern.contains('~') {
        return range_match(pattern, value, is_when);
    }
    match (param, pattern.strip_prefix('$')) {
        (Some(consumer), Some(key)) => match url_value(consumer, key) {
            Some(p) => is_match_glob_pattern(&p, value),
            None => false,
        },
        _ => is_match_glob_pattern(pattern, value),
    }
}

/// Java's `StringUtils.parseInteger`: a number, else 0.
fn parse_integer(s: &str) -> Option<i32> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok() // too large: Java throws, which the caller turns into the default
    } else {
        Some(0)
    }
}

/// Java's `RangeValuePattern.match`, including its quirk: `a~` (no end) splits into
/// one part and is treated as invalid, returning the default (match in a then-part,
/// no match in a when-part).
fn range_match(pattern: &str, value: &str, is_when: bool) -> bool {
    let default = !is_when;
    let Some(v) = parse_integer(value) else {
        return default;
    };
    // Java's String.split drops trailing empty strings.
    let mut parts: Vec<&str> = pattern.split('~').collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    if parts.len() < 2 {
        return default;
    }
    let (start, end) = (parts[0], parts[1]);
    match (start.is_empty(), end.is_empty()) {
        (true, true) => default,
        (true, false) => match parse_integer(end) {
            Some(e) => v <= e,
            None => default,
        },
        (false, true) => match parse_integer(start) {
            Some(s) => v >= s,
            None => default,
        },
        (false, false) => match (parse_integer(start), parse_integer(end)) {
            (Some(s), Some(e)) => s <= v && v <= e,
            _ => default,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_follows_the_java_regex() {
        assert_eq!(
            tokens("host = 1.1.1.1,2.2.2.2 & method != a"),
            vec![
                ("", "host"),
                ("=", "1.1.1.1"),
                (",", "2.2.2.2"),
                ("&", "method"),
                ("!=", "a")
            ]
        );
        assert_eq!(tokens("a=b"), vec![("", "a"), ("=", "b")]);
    }

    #[test]
    fn ranges() {
        assert!(range_match("1~100", "50", true));
        assert!(!range_match("1~100", "101", true));
        assert!(range_match("~100", "7", true));
        assert!(!range_match("~100", "700", true));
        // Java quirk: "5~" is invalid; the default applies.
        assert!(!range_match("5~", "7", true));
        assert!(range_match("5~", "7", false));
        // Non-numbers count as 0.
        assert!(range_match("0~1", "abc", true));
    }

    #[test]
    fn comma_after_a_new_key_extends_the_previous_values_as_java_does() {
        let c = Condition::parse("=> host = 1.1.1.1 & port , 2.2.2.2").unwrap();
        let then = c.then.as_ref().unwrap();
        assert_eq!(then[0].matches, ["1.1.1.1", "2.2.2.2"]);
        assert!(then[1].matches.is_empty());
    }

    #[test]
    fn parse_errors() {
        assert!(Condition::parse("host = a => , b").is_err());
        assert!(Condition::parse("=> host = 1").is_ok());
        assert!(Condition::parse("host = 1").is_ok());
    }
}
