//! Fuzz: the governance rule parsers (condition rules v3.0 and v3.1, tag rules,
//! override configurators in YAML and URL-list form, single conditions) and the YAML
//! and properties configuration readers.

use rubbo_fuzz::targets;

#[test]
fn condition_tag_and_override_rules() {
    targets::RULES.fuzz();
}

#[test]
fn yaml_and_properties_config() {
    targets::CONFIG.fuzz();
}
