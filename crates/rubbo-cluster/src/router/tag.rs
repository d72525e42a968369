//! The tag router (Java's `TagStateRouter`, rule model `TagRouterRule`).

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use rubbo_common::keys::{FORCE_TAG_KEY, TAG_KEY};
use rubbo_common::{Invocation, Url};
use serde_yaml_ng::Value as Yaml;

use super::condition::rule::{yaml_bool, yaml_str};
use super::matching::match_ip_expression;
use super::{Candidates, Router};
use crate::ClusterError;

/// Java's `StringMatch`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StringMatch {
    /// Equal to.
    pub exact: Option<String>,
    /// Starts with.
    pub prefix: Option<String>,
    /// A regular expression the whole input must match (Java's `String.matches`); an
    /// invalid expression matches nothing.
    pub regex: Option<String>,
    /// Equal to, or `*` for anything.
    pub wildcard: Option<String>,
    /// Absent or empty.
    pub empty: Option<String>,
    /// Present and not empty.
    pub noempty: Option<String>,
    /// `regex`, compiled at its first match and kept (a route is matched on every call).
    compiled: CompiledRegex,
}

/// A compiled `StringMatch::regex`, with the pattern it was compiled from (so a
/// changed pattern is compiled again); `None` inside: the pattern is invalid.
#[derive(Debug, Clone, Default)]
struct CompiledRegex(std::sync::OnceLock<(String, Option<regex::Regex>)>);

impl PartialEq for CompiledRegex {
    /// A cache: never part of what a match means.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl CompiledRegex {
    fn is_match(&self, pattern: &str, input: &str) -> bool {
        let compile = || regex::Regex::new(&format!("^(?:{pattern})$")).ok();
        let (p, re) = self.0.get_or_init(|| (pattern.to_owned(), compile()));
        if p == pattern {
            re.as_ref().is_some_and(|re| re.is_match(input))
        } else {
            compile().is_some_and(|re| re.is_match(input))
        }
    }
}

impl StringMatch {
    /// The `StringMatch` of a YAML mapping (`exact`, `prefix`, `regex`, `wildcard`,
    /// `empty`, `noempty`); anything else matches nothing.
    pub(crate) fn from_yaml(v: &Yaml) -> Self {
        StringMatch {
            exact: yaml_str(v, "exact"),
            prefix: yaml_str(v, "prefix"),
            regex: yaml_str(v, "regex"),
            wildcard: yaml_str(v, "wildcard"),
            empty: yaml_str(v, "empty"),
            noempty: yaml_str(v, "noempty"),
            ..StringMatch::default()
        }
    }

    /// Java's `StringMatch.isMatch`.
    pub fn is_match(&self, input: Option<&str>) -> bool {
        if let (Some(e), Some(i)) = (&self.exact, input) {
            return i == e;
        }
        if let (Some(p), Some(i)) = (&self.prefix, input) {
            return i.starts_with(p.as_str());
        }
        if let (Some(r), Some(i)) = (&self.regex, input) {
            return self.compiled.is_match(r, i);
        }
        if let (Some(w), Some(i)) = (&self.wildcard, input) {
            return w == i || w == "*";
        }
        if self.empty.is_some() {
            return input.is_none_or(str::is_empty);
        }
        if self.noempty.is_some() {
            return input.is_some_and(|i| !i.is_empty());
        }
        false
    }
}

/// One tag of a tag rule.
#[derive(Debug, Clone, Default)]
pub struct Tag {
    /// The tag name requested by `dubbo.tag`.
    pub name: String,
    /// IP expressions of the providers in this tag.
    pub addresses: Vec<String>,
    /// Provider URL parameter matches (all must hold) putting providers in this tag.
    pub matches: Vec<(String, StringMatch)>,
}

impl Tag {
    fn contains(&self, provider: &Url) -> bool {
        address_matches(provider, &self.addresses)
            || (!self.matches.is_empty()
                && self
                    .matches
                    .iter()
                    .all(|(k, m)| provider.get_param(k).is_some_and(|v| m.is_match(Some(v)))))
    }
}

fn address_matches(provider: &Url, addresses: &[String]) -> bool {
    let host = provider.host().unwrap_or("");
    let port = provider.port();
    addresses
        .iter()
        .any(|a| match_ip_expression(a, host, port) || *a == format!("0.0.0.0:{port}"))
}

/// A tag routing rule (`{provider app}.tag-router`).
///
/// ```
/// use rubbo_cluster::router::TagRule;
/// let rule = TagRule::from_yaml(r#"
/// configVersion: v3.0
/// force: false
/// enabled: true
/// key: demo-provider
/// tags:
///   - name: gray
///     match:
///       - key: env
///         value: {exact: gray}
///   - name: canary
///     addresses: ["192.168.1.10:20880", "192.168.1.11"]
/// "#).unwrap();
/// assert_eq!(rule.tags.len(), 2);
/// assert_eq!(rule.tags[1].addresses.len(), 2);
/// ```
#[derive(Debug, Clone, Default)]
pub struct TagRule {
    /// `key` (the provider application).
    pub key: Option<String>,
    /// `force`: no fallback to untagged providers when the tag has none.
    pub force: bool,
    /// `enabled` (default true).
    pub enabled: bool,
    /// `runtime` (default true).
    pub runtime: bool,
    /// The tags.
    pub tags: Vec<Tag>,
}

impl TagRule {
    /// Parses the YAML rule.
    pub fn from_yaml(text: &str) -> Result<Self, ClusterError> {
        let invalid = |r: String| ClusterError::InvalidYaml {
            kind: "tag",
            reason: r,
        };
        let doc: Yaml = serde_yaml_ng::from_str(text).map_err(|e| invalid(e.to_string()))?;
        if !doc.is_mapping() {
            return Err(invalid("the rule is not a mapping".into()));
        }
        let mut rule = TagRule {
            key: yaml_str(&doc, "key"),
            force: yaml_bool(&doc, "force", false),
            enabled: yaml_bool(&doc, "enabled", true),
            runtime: yaml_bool(&doc, "runtime", true),
            tags: Vec::new(),
        };
        if let Some(Yaml::Sequence(tags)) = doc.get("tags") {
            for t in tags {
                let mut tag = Tag {
                    name: yaml_str(t, "name").unwrap_or_default(),
                    ..Tag::default()
                };
                if let Some(Yaml::Sequence(addrs)) = t.get("addresses") {
                    tag.addresses = addrs
                        .iter()
                        .filter_map(|a| a.as_str().map(str::to_owned))
                        .collect();
                }
                if let Some(Yaml::Sequence(ms)) = t.get("match") {
                    for m in ms {
                        let Some(key) = yaml_str(m, "key") else {
                            continue;
                        };
                        let sm = m
                            .get("value")
                            .map(StringMatch::from_yaml)
                            .unwrap_or_default();
                        tag.matches.push((key, sm));
                    }
                }
                if !tag.name.is_empty() {
                    rule.tags.push(tag);
                }
            }
        }
        Ok(rule)
    }

    /// Whether the rule can route.
    pub fn is_valid(&self) -> bool {
        !self.tags.is_empty()
    }

    fn in_any_tag(&self, provider: &Url) -> bool {
        self.tags.iter().any(|t| t.contains(provider))
    }

    fn has_tag(&self, name: &str) -> bool {
        self.tags.iter().any(|t| t.name == name)
    }
}

/// Routes by the request tag (`dubbo.tag` attachment, else the consumer URL's) to
/// providers tagged by the dynamic [`TagRule`] or by their own `dubbo.tag` parameter.
pub struct TagRouter {
    rule: ArcSwapOption<TagRule>,
}

impl fmt::Debug for TagRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TagRouter")
            .field("rule", &self.rule.load())
            .finish()
    }
}

impl Default for TagRouter {
    fn default() -> Self {
        Self::new()
    }
}

fn provider_tag(url: &Url) -> Option<&str> {
    url.get_param(TAG_KEY).filter(|t| !t.is_empty())
}

impl TagRouter {
    /// A router with no dynamic rule (static `dubbo.tag` parameters only).
    pub fn new() -> Self {
        TagRouter {
            rule: ArcSwapOption::empty(),
        }
    }

    /// Replaces the dynamic rule (`None` removes it).
    pub fn set_rule(&self, rule: Option<TagRule>) {
        self.rule.store(rule.map(Arc::new));
    }

    /// The current dynamic rule.
    pub fn rule(&self) -> Option<Arc<TagRule>> {
        self.rule.load_full()
    }
}

fn request_tag<'a>(consumer: &'a Url, inv: &'a Invocation) -> Option<&'a str> {
    inv.attachment_str(TAG_KEY)
        .filter(|t| !t.is_empty())
        .or_else(|| consumer.get_param(TAG_KEY).filter(|t| !t.is_empty()))
}

fn force_tag(consumer: &Url, inv: &Invocation) -> bool {
    inv.attachment_str(FORCE_TAG_KEY)
        .or_else(|| consumer.get_param(FORCE_TAG_KEY))
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

impl Router for TagRouter {
    fn name(&self) -> &str {
        "tag"
    }

    fn priority(&self) -> i32 {
        100
    }

    fn route<'a>(
        &self,
        candidates: Candidates<'a>,
        consumer: &Url,
        invocation: &Invocation,
    ) -> Candidates<'a> {
        if candidates.is_empty() {
            return candidates;
        }
        let tag = request_tag(consumer, invocation);
        let guard = self.rule.load();
        let rule = guard.as_deref().filter(|r| r.enabled && r.is_valid());
        let Some(rule) = rule else {
            // Static tags only; with the snapshot's precomputed tags when available.
            if let Some(meta) = candidates.meta() {
                if !meta.any_tag {
                    // No provider is tagged: a tag request falls back to all (unless
                    // forced), an untagged request keeps all.
                    return match tag {
                        Some(_) if force_tag(consumer, invocation) => {
                            let mut empty = candidates;
                            empty.clear();
                            empty
                        }
                        _ => candidates,
                    };
                }
                let tag_of = |i: usize| meta.tags[i].as_deref();
                return match tag {
                    Some(tag) => {
                        let tagged = candidates.filtered_indexed(|i, _| tag_of(i) == Some(tag));
                        if tagged.is_empty() && !force_tag(consumer, invocation) {
                            candidates.filtered_indexed(|i, _| tag_of(i).is_none())
                        } else {
                            tagged
                        }
                    }
                    None => candidates.filtered_indexed(|i, _| tag_of(i).is_none()),
                };
            }
            return match tag {
                Some(tag) => {
                    let tagged = candidates.filtered(|p| provider_tag(p.url()) == Some(tag));
                    if tagged.is_empty() && !force_tag(consumer, invocation) {
                        candidates.filtered(|p| provider_tag(p.url()).is_none())
                    } else {
                        tagged
                    }
                }
                None => candidates.filtered(|p| provider_tag(p.url()).is_none()),
            };
        };
        match tag {
            Some(tag) => {
                // A tag naming no provider (no address, no URL match in the directory)
                // counts as absent, as in Java, and static tags decide.
                let all = candidates.all();
                let named =
                    rule.tags.iter().find(|t| t.name == tag).filter(|t| {
                        !t.addresses.is_empty() || all.iter().any(|p| t.contains(p.url()))
                    });
                let result = match named {
                    Some(t) => {
                        let r = candidates.filtered(|p| t.contains(p.url()));
                        if !r.is_empty() || rule.force {
                            return r;
                        }
                        r
                    }
                    None => candidates.filtered(|p| provider_tag(p.url()) == Some(tag)),
                };
                if !result.is_empty() || force_tag(consumer, invocation) {
                    return result;
                }
                candidates
                    .filtered(|p| !rule.in_any_tag(p.url()) && provider_tag(p.url()).is_none())
            }
            None => {
                let untagged = candidates.filtered(|p| !rule.in_any_tag(p.url()));
                if untagged.is_empty() {
                    return untagged;
                }
                untagged.filtered(|p| provider_tag(p.url()).is_none_or(|t| !rule.has_tag(t)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StringMatch;

    #[test]
    fn regex_matches_the_whole_input_as_javas_string_matches() {
        let m = StringMatch {
            regex: Some("gr(a|e)y-[0-9]+".into()),
            ..StringMatch::default()
        };
        assert!(m.is_match(Some("gray-12")));
        assert!(m.is_match(Some("grey-1")));
        assert!(!m.is_match(Some("xgray-1")), "whole input, not a substring");
        assert!(!m.is_match(Some("gray-")));
        assert!(!m.is_match(None));
        let bad = StringMatch {
            regex: Some("(".into()),
            ..StringMatch::default()
        };
        assert!(!bad.is_match(Some("(")));
    }
}
