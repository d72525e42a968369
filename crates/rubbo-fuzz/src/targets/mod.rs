//! The fuzz targets: one per decoder that reads peer or operator input. The stable
//! runner ([`crate::fuzz`], in `cargo test`) and the cargo-fuzz targets in `fuzz/`
//! (libFuzzer, nightly) both run these checks, so an invariant lives in one place.

pub mod dubbo;
pub mod hessian;
pub mod instance;
pub mod qos;
pub mod rules;
pub mod triple;
pub mod url;

/// One decoder under fuzz.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The name of the target everywhere: the stable run's report line, the cargo-fuzz
    /// target (`fuzz/fuzz_targets/<name>.rs`), its corpus (`fuzz/corpus/<name>/`) and
    /// dictionary (`fuzz/dict/<name>.dict`).
    pub name: &'static str,
    /// Feeds one input to the decoder and asserts the invariants: panics on a
    /// failure, returns on any outcome the decoder may have (values or errors).
    pub check: fn(&[u8]),
    /// Seed inputs, from the fixtures and what Java and Rubbo write.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Tokens worth inserting.
    pub dict: &'static [&'static [u8]],
}

impl Target {
    /// Runs the check on one input and panics if it allocated more than
    /// [`crate::MAX_ALLOC`] at once: what a cargo-fuzz target calls.
    pub fn run(&self, input: &[u8]) {
        crate::alloc::take_biggest();
        (self.check)(input);
        let allocated = crate::alloc::take_biggest();
        assert!(
            allocated <= crate::MAX_ALLOC,
            "fuzz {}: allocated {allocated} bytes at once",
            self.name
        );
    }

    /// A time-boxed stable run of this target (see [`crate::fuzz`]).
    pub fn fuzz(&self) -> crate::Report {
        crate::fuzz(self.name, &(self.seeds)(), self.dict, self.check)
    }
}

/// Hessian 2: one value read, skipped and written back.
pub const HESSIAN_VALUE: Target = Target {
    name: "hessian-value",
    check: hessian::values,
    seeds: hessian::seeds,
    dict: crate::seeds::HESSIAN_TAGS,
};

/// Hessian 2: a stream of values, skipped and written back byte-stable.
pub const HESSIAN_STREAM: Target = Target {
    name: "hessian-stream",
    check: hessian::streams,
    seeds: hessian::seeds,
    dict: crate::seeds::HESSIAN_TAGS,
};

/// Hessian 2: typed serde shapes.
pub const HESSIAN_SERDE: Target = Target {
    name: "hessian-serde",
    check: hessian::typed,
    seeds: hessian::seeds,
    dict: crate::seeds::HESSIAN_TAGS,
};

/// Dubbo frames and their bodies, default payload limit.
pub const DUBBO_FRAME: Target = Target {
    name: "dubbo-frame",
    check: dubbo::frames,
    seeds: crate::seeds::dubbo_frames,
    dict: dubbo::FRAME_DICT,
};

/// Dubbo frames and their bodies, no payload limit.
pub const DUBBO_FRAME_UNLIMITED: Target = Target {
    name: "dubbo-frame-unlimited",
    check: dubbo::frames_unlimited,
    seeds: crate::seeds::dubbo_frames,
    dict: dubbo::FRAME_DICT,
};

/// Dubbo request and response bodies.
pub const DUBBO_BODY: Target = Target {
    name: "dubbo-body",
    check: dubbo::bodies,
    seeds: crate::seeds::dubbo_bodies,
    dict: crate::seeds::HESSIAN_TAGS,
};

/// URLs, their ZooKeeper node form and URL lists.
pub const URL: Target = Target {
    name: "url",
    check: url::urls,
    seeds: url::seeds,
    dict: url::DICT,
};

/// Condition, tag and override (configurator) rules.
pub const RULES: Target = Target {
    name: "rules",
    check: rules::rules,
    seeds: rules::rule_seeds,
    dict: rules::YAML_TOKENS,
};

/// YAML and properties configuration.
pub const CONFIG: Target = Target {
    name: "config",
    check: rules::config,
    seeds: rules::config_seeds,
    dict: rules::YAML_TOKENS,
};

/// Triple message framing and the wrappers inside.
pub const TRIPLE_FRAME: Target = Target {
    name: "triple-frame",
    check: triple::framing,
    seeds: triple::frame_seeds,
    dict: triple::FRAME_DICT,
};

/// Compressed Triple messages.
pub const TRIPLE_COMPRESSED: Target = Target {
    name: "triple-compressed",
    check: triple::compressed,
    seeds: triple::compressed_seeds,
    dict: triple::COMPRESSED_DICT,
};

/// Triple request and response wrappers.
pub const TRIPLE_WRAPPER: Target = Target {
    name: "triple-wrapper",
    check: triple::wrappers,
    seeds: triple::wrapper_seeds,
    dict: triple::WRAPPER_DICT,
};

/// ZooKeeper instance nodes and `MetadataInfo` JSON.
pub const INSTANCE_JSON: Target = Target {
    name: "instance-json",
    check: instance::instance_json,
    seeds: instance::instance_seeds,
    dict: instance::DICT,
};

/// The Kubernetes `io.dubbo/metadata` annotation.
pub const K8S_METADATA: Target = Target {
    name: "k8s-metadata",
    check: instance::annotation,
    seeds: instance::annotation_seeds,
    dict: instance::DICT,
};

/// QoS telnet lines and HTTP requests.
pub const QOS: Target = Target {
    name: "qos",
    check: qos::connection,
    seeds: qos::seeds,
    dict: qos::DICT,
};

/// Every target.
pub const ALL: &[Target] = &[
    HESSIAN_VALUE,
    HESSIAN_STREAM,
    HESSIAN_SERDE,
    DUBBO_FRAME,
    DUBBO_FRAME_UNLIMITED,
    DUBBO_BODY,
    URL,
    RULES,
    CONFIG,
    TRIPLE_FRAME,
    TRIPLE_COMPRESSED,
    TRIPLE_WRAPPER,
    INSTANCE_JSON,
    K8S_METADATA,
    QOS,
];
