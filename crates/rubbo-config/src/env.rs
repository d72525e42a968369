//! Java's environment mapping (`EnvironmentConfiguration`, `StringUtils.toOSStyleKey`):
//! the variables tried, in order, for one property key.

/// The variable names Java tries for `key`, first match wins:
/// the key itself; dots and dashes to `_`, upper case (`DUBBO_APPLICATION_QOS_PORT`);
/// dots to `_`, dashes removed, upper case; dots to `_`, dashes kept, upper case;
/// dots and dashes to `_`, lower case; and `toOSStyleKey` (upper case, dots to `_`,
/// `DUBBO_` prefixed when missing).
pub(crate) fn candidates(key: &str) -> Vec<String> {
    let normalized = key.replace(['.', '-'], "_");
    let mut out = vec![
        key.to_owned(),
        normalized.to_uppercase(),
        key.replace('.', "_").replace('-', "").to_uppercase(),
        key.replace('.', "_").to_uppercase(),
        normalized.to_lowercase(),
    ];
    let mut os = key.to_uppercase().replace('.', "_");
    if !os.starts_with("DUBBO_") {
        os.insert_str(0, "DUBBO_");
    }
    out.push(os);
    let mut seen = std::collections::HashSet::new();
    out.retain(|c| seen.insert(c.clone()));
    out
}

#[cfg(test)]
mod tests {
    use super::candidates;

    #[test]
    fn java_candidates_in_order() {
        assert_eq!(
            candidates("dubbo.registry.address"),
            [
                "dubbo.registry.address",
                "DUBBO_REGISTRY_ADDRESS",
                "dubbo_registry_address"
            ]
        );
        assert_eq!(
            candidates("dubbo.application.qos-port"),
            [
                "dubbo.application.qos-port",
                "DUBBO_APPLICATION_QOS_PORT",
                "DUBBO_APPLICATION_QOSPORT",
                "DUBBO_APPLICATION_QOS-PORT",
                "dubbo_application_qos_port",
            ]
        );
        assert_eq!(candidates("timeout").last().unwrap(), "DUBBO_TIMEOUT");
    }
}
