#![doc = include_str!("../README.md")]

mod generator;

use std::io;
use std::path::{Path, PathBuf};

pub use prost_build;

use crate::generator::{Generator, Options};

/// The path generated messages derive `Message` through, so a crate using the
/// generated code depends on `rubbo` only.
const PROST_PATH: &str = "::rubbo::codegen::prost";

/// A code generator for `.proto` files, with everything on: messages (prost), a
/// server trait and dispatcher, and a client for every service.
pub fn configure() -> Builder {
    Builder {
        client: true,
        server: true,
        out_dir: None,
        rerun_if_changed: true,
    }
}

/// Compiles one `.proto` file with the defaults of [`configure`]; its directory is the
/// include path. For a `build.rs`:
///
/// ```no_run
/// fn main() -> std::io::Result<()> {
///     rubbo_build::compile_protos("proto/greeter.proto")
/// }
/// ```
pub fn compile_protos(proto: impl AsRef<Path>) -> io::Result<()> {
    let proto = proto.as_ref();
    let include = proto.parent().unwrap_or_else(|| Path::new("."));
    configure().compile_protos(&[proto], &[include])
}

/// What to generate, and where (tonic-build's `Builder`, by value).
#[derive(Debug, Clone)]
pub struct Builder {
    client: bool,
    server: bool,
    out_dir: Option<PathBuf>,
    rerun_if_changed: bool,
}

impl Builder {
    /// Whether to generate the client methods (default: yes). The client struct, which
    /// holds the service descriptor, is always generated.
    pub fn build_client(mut self, enable: bool) -> Self {
        self.client = enable;
        self
    }

    /// Whether to generate the server dispatcher (default: yes).
    pub fn build_server(mut self, enable: bool) -> Self {
        self.server = enable;
        self
    }

    /// Where to write the generated files (default: Cargo's `OUT_DIR`).
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.out_dir = Some(dir.as_ref().to_owned());
        self
    }

    /// Whether to print `cargo:rerun-if-changed` for each proto and include directory
    /// (default: yes, as a build script wants).
    pub fn emit_rerun_if_changed(mut self, enable: bool) -> Self {
        self.rerun_if_changed = enable;
        self
    }

    /// Compiles `protos` (found through `includes`) into one `{package}.rs` file per
    /// proto package (`_.rs` for protos without a package), to include with
    /// `rubbo::include_proto!("package")`.
    pub fn compile_protos(
        self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> io::Result<()> {
        self.compile_with_config(prost_build::Config::new(), protos, includes)
    }

    /// [`compile_protos`](Self::compile_protos) with a prost configuration of your own
    /// (type attributes, bytes fields...). Its service generator, prost path and
    /// `file_descriptor_set_path` are replaced: the descriptor set is written beside
    /// the generated code, and each service descriptor embeds it
    /// (`ServiceDescriptor::file_descriptor_set`).
    pub fn compile_with_config(
        self,
        mut config: prost_build::Config,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> io::Result<()> {
        if self.rerun_if_changed {
            for p in protos.iter().map(AsRef::as_ref) {
                println!("cargo:rerun-if-changed={}", p.display());
            }
            for i in includes.iter().map(AsRef::as_ref) {
                println!("cargo:rerun-if-changed={}", i.display());
            }
        }
        if let Some(dir) = &self.out_dir {
            config.out_dir(dir);
        }
        // The schema every generated service descriptor embeds, for reflection and
        // JSON: one descriptor set per compile call, named after its protos.
        let descriptor_set = self
            .out_dir
            .clone()
            .or_else(|| std::env::var_os("OUT_DIR").map(PathBuf::from))
            .map(|dir| dir.join(descriptor_set_name(protos)));
        if let Some(path) = &descriptor_set {
            config.file_descriptor_set_path(path);
        }
        config
            .prost_path(PROST_PATH)
            .service_generator(Box::new(Generator {
                options: Options {
                    client: self.client,
                    server: self.server,
                    descriptor_set,
                },
            }));
        config.compile_protos(protos, includes)
    }
}

/// The file name of the descriptor set of one compile call: the same protos give the
/// same name, so two calls in one build script do not overwrite each other's.
fn descriptor_set_name(protos: &[impl AsRef<Path>]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in protos {
        p.as_ref().hash(&mut h);
    }
    format!("rubbo_descriptor_set_{:016x}.bin", h.finish())
}
