//! The governance rule parsers (condition rules v3.0 and v3.1, tag rules, override
//! configurators in YAML and URL-list form, single conditions) and the YAML and
//! properties configuration readers.

use rubbo_cluster::configurator::parse_configurators;
use rubbo_cluster::router::{Condition, ConditionRule, TagRule};
use rubbo_config::{ConfigLoader, parse_set_arg};

const RULES: &[&str] = &[
    "configVersion: v3.0\nscope: service\nforce: true\nruntime: true\nenabled: true\nkey: org.apache.dubbo.samples.DemoService\nconditions:\n  - method=sayHello => host=10.0.0.1\n  - host != 10.20.153.10,10.20.153.11 =>\n  - => host = 172.22.3.1*,172.22.3.2*\n",
    "configVersion: v3.1\nscope: application\nkey: demo-consumer\nforce: false\nconditions:\n  - from:\n      match: region=hz\n    trafficDisable: false\n    to:\n      - match: region=hz\n        weight: 80\n      - match: region=sh\n    ratio: 20\n",
    "configVersion: v3.0\nforce: false\nruntime: true\nenabled: true\nkey: demo-provider\ntags:\n  - name: tag1\n    match:\n      - key: env\n        value:\n          exact: gray\n  - name: tag2\n    addresses: [\"127.0.0.1:20880\", \"10.0.0.2:20881\"]\n",
    "configVersion: v3.0\nscope: service\nkey: org.demo.S\nenabled: true\nconfigs:\n  - addresses: [0.0.0.0]\n    side: consumer\n    parameters:\n      timeout: 6000\n      loadbalance: random\n  - side: provider\n    addresses: [\"10.0.0.1:20880\"]\n    providerAddresses: [\"10.0.0.1\"]\n    services: [\"org.demo.S\"]\n    applications: [app]\n    parameters:\n      weight: 200\n    match:\n      param:\n        - key: env\n          value:\n            prefix: gr\n",
    "[\"override://0.0.0.0/org.demo.S?category=configurators&dynamic=false&timeout=500\"]",
    "arguments[0] = 1~100 & application = web => region = hz",
    "method = find*,list* & host != 10.0.0.* => host = 10.0.0.1~10.0.0.9",
];

const CONFIG: &[&str] = &[
    "dubbo:\n  application:\n    name: demo\n    qos-port: 22222\n  protocol:\n    name: dubbo\n    port: -1\n    threads: 200\n  registry:\n    address: zookeeper://127.0.0.1:2181\n  provider:\n    timeout: 3000\n  consumer:\n    check: false\n",
    "dubbo.application.name=demo\ndubbo.protocol.port=20880\ndubbo.registries.r1.address=zookeeper://a:2181\n",
    "dubbo:\n  protocols:\n    - name: tri\n      port: 50051\n    - name: dubbo\n      port: 20880\n  services:\n    org.demo.S:\n      methods:\n        - name: say\n          timeout: 100\n",
];

/// YAML syntax and rule operators.
pub const YAML_TOKENS: &[&[u8]] = &[
    b"\n",
    b": ",
    b"- ",
    b"  ",
    b"[",
    b"]",
    b"{",
    b"}",
    b"'",
    b"\"",
    b"&a ",
    b"*a",
    b"!!str ",
    b"<<: ",
    b"|\n",
    b">\n",
    b"---\n",
    b"~",
    b"=>",
    b"!=",
    b"*",
    b",",
    b"&",
    b"arguments[",
];

/// Condition, tag and override rules.
pub fn rule_seeds() -> Vec<Vec<u8>> {
    crate::seeds::texts(RULES)
}

/// YAML and properties configuration files.
pub fn config_seeds() -> Vec<Vec<u8>> {
    crate::seeds::texts(CONFIG)
}

/// A document as every rule parser reads it.
pub fn rules(input: &[u8]) {
    let text = crate::text(input);
    let _ = ConditionRule::from_yaml(&text);
    let _ = TagRule::from_yaml(&text);
    let _ = parse_configurators(&text);
    let _ = Condition::parse(&text);
}

/// A document as a YAML and as a properties configuration file, and as a `--set`
/// argument.
pub fn config(input: &[u8]) {
    let text = crate::text(input);
    if let Ok(loader) = ConfigLoader::default().yaml("fuzz.yaml", &text) {
        let _ = loader.load();
    }
    if let Ok(loader) = ConfigLoader::default().properties("fuzz.properties", &text) {
        let _ = loader.load();
    }
    let _ = parse_set_arg(&text);
}
