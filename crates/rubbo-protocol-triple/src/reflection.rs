//! gRPC server reflection (`grpc.reflection.v1.ServerReflection` and
//! `grpc.reflection.v1alpha.ServerReflection`, the protocol of
//! `grpc/reflection/v1/reflection.proto`; both versions have the same messages) on
//! every Triple server, so `grpcurl -plaintext host:port list` and `describe` work
//! with no proto file.
//!
//! `ServerReflectionInfo` is a bidirectional stream: each request gets one response,
//! in order, while the stream lasts. Answers come from the protocol's [`Schemas`]:
//!
//! - `list_services`: the IDL services exported on this server whose schema is known,
//!   by proto name, and the built-in health and reflection services. Rust-trait
//!   (wrapper-mode) services have no protobuf schema and are not listed, as Java's
//!   `ReflectionV1AlphaService` lists only `SchemaDescriptorRegistry` services.
//! - `file_by_filename`, `file_containing_symbol` (a service, method, message, enum or
//!   extension), `file_containing_extension`: the file and its imports,
//!   transitively, as encoded `FileDescriptorProto`s.
//! - `all_extension_numbers_of_type`: the extension numbers of a message.
//!
//! Unknown names get an `error_response` with `NOT_FOUND`, a request that does not
//! decode or asks for nothing one with `INVALID_ARGUMENT`; the stream goes on.
//!
//! Java 3.3 serves only v1alpha; v1 is served too because grpcurl (and grpc-go's
//! clients) ask for it first. The messages are written here with prost's derive, as
//! in `health.rs`; their schema is the vendored `proto/grpc/reflection/*`.

use bytes::Bytes;
use futures::StreamExt;
use prost::Message;
use prost_reflect::{DescriptorPool, FileDescriptor};
use rubbo_common::exporters::ExporterMap;
use rubbo_common::stream::MessageStream;
use tracing::debug;

use crate::health;
use crate::schemas::{Schemas, with_dependencies};
use crate::status::Code;

/// The reflection service's gRPC name, v1.
pub(crate) const V1: &str = "grpc.reflection.v1.ServerReflection";
/// The reflection service's gRPC name, v1alpha (the one Java serves).
pub(crate) const V1ALPHA: &str = "grpc.reflection.v1alpha.ServerReflection";
/// Its one rpc.
pub(crate) const METHOD: &str = "ServerReflectionInfo";

/// `ServerReflectionRequest`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ServerReflectionRequest {
    #[prost(string, tag = "1")]
    pub(crate) host: String,
    #[prost(oneof = "MessageRequest", tags = "3, 4, 5, 6, 7")]
    pub(crate) message_request: Option<MessageRequest>,
}

/// `ServerReflectionRequest.message_request`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum MessageRequest {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(message, tag = "5")]
    FileContainingExtension(ExtensionRequest),
    #[prost(string, tag = "6")]
    AllExtensionNumbersOfType(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

/// `ExtensionRequest`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ExtensionRequest {
    #[prost(string, tag = "1")]
    pub(crate) containing_type: String,
    #[prost(int32, tag = "2")]
    pub(crate) extension_number: i32,
}

/// `ServerReflectionResponse`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ServerReflectionResponse {
    #[prost(string, tag = "1")]
    pub(crate) valid_host: String,
    #[prost(message, optional, tag = "2")]
    pub(crate) original_request: Option<ServerReflectionRequest>,
    #[prost(oneof = "MessageResponse", tags = "4, 5, 6, 7")]
    pub(crate) message_response: Option<MessageResponse>,
}

/// `ServerReflectionResponse.message_response` (the proto's variant names).
#[allow(clippy::enum_variant_names)]
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum MessageResponse {
    #[prost(message, tag = "4")]
    FileDescriptorResponse(FileDescriptorResponse),
    #[prost(message, tag = "5")]
    AllExtensionNumbersResponse(ExtensionNumberResponse),
    #[prost(message, tag = "6")]
    ListServicesResponse(ListServiceResponse),
    #[prost(message, tag = "7")]
    ErrorResponse(ErrorResponse),
}

/// `FileDescriptorResponse`: encoded `FileDescriptorProto`s.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub(crate) file_descriptor_proto: Vec<Vec<u8>>,
}

/// `ExtensionNumberResponse`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ExtensionNumberResponse {
    #[prost(string, tag = "1")]
    pub(crate) base_type_name: String,
    #[prost(int32, repeated, tag = "2")]
    pub(crate) extension_number: Vec<i32>,
}

/// `ListServiceResponse`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ListServiceResponse {
    #[prost(message, repeated, tag = "1")]
    pub(crate) service: Vec<ServiceResponse>,
}

/// `ServiceResponse`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ServiceResponse {
    #[prost(string, tag = "1")]
    pub(crate) name: String,
}

/// `ErrorResponse`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ErrorResponse {
    #[prost(int32, tag = "1")]
    pub(crate) error_code: i32,
    #[prost(string, tag = "2")]
    pub(crate) error_message: String,
}

/// The reply stream of one `ServerReflectionInfo` call: one response per request,
/// as the requests come (an error of the request stream ends the replies with it).
pub(crate) fn serve(
    requests: MessageStream,
    exporters: ExporterMap,
    schemas: Schemas,
) -> MessageStream {
    MessageStream::new(requests.map(move |request| {
        request.map(|bytes| Bytes::from(answer(&bytes, &exporters, &schemas).encode_to_vec()))
    }))
}

/// The response to one encoded request.
pub(crate) fn answer(
    request: &[u8],
    exporters: &ExporterMap,
    schemas: &Schemas,
) -> ServerReflectionResponse {
    let request = match ServerReflectionRequest::decode(request) {
        Ok(r) => r,
        Err(e) => {
            debug!(error = %e, "bad reflection request");
            return ServerReflectionResponse {
                valid_host: String::new(),
                original_request: None,
                message_response: Some(error(
                    Code::InvalidArgument,
                    format!("bad ServerReflectionRequest: {e}"),
                )),
            };
        }
    };
    let pool = schemas.pool();
    let response = match &request.message_request {
        Some(MessageRequest::ListServices(_)) => {
            MessageResponse::ListServicesResponse(ListServiceResponse {
                service: services(exporters, &pool)
                    .into_iter()
                    .map(|name| ServiceResponse { name })
                    .collect(),
            })
        }
        Some(MessageRequest::FileByFilename(name)) => match pool.get_file_by_name(name) {
            Some(file) => files(file),
            None => error(Code::NotFound, format!("file not found: {name}")),
        },
        Some(MessageRequest::FileContainingSymbol(symbol)) => {
            match file_containing_symbol(&pool, symbol) {
                Some(file) => files(file),
                None => error(Code::NotFound, format!("symbol not found: {symbol}")),
            }
        }
        Some(MessageRequest::FileContainingExtension(ext)) => {
            let file = pool
                .get_message_by_name(&ext.containing_type)
                .and_then(|m| {
                    u32::try_from(ext.extension_number)
                        .ok()
                        .and_then(|n| m.get_extension(n))
                })
                .map(|e| e.parent_file());
            match file {
                Some(file) => files(file),
                None => error(
                    Code::NotFound,
                    format!(
                        "extension not found: {} {}",
                        ext.containing_type, ext.extension_number
                    ),
                ),
            }
        }
        Some(MessageRequest::AllExtensionNumbersOfType(name)) => {
            match pool.get_message_by_name(name) {
                Some(m) => MessageResponse::AllExtensionNumbersResponse(ExtensionNumberResponse {
                    base_type_name: name.clone(),
                    extension_number: m
                        .extensions()
                        .filter_map(|e| i32::try_from(e.number()).ok())
                        .collect(),
                }),
                None => error(Code::NotFound, format!("type not found: {name}")),
            }
        }
        None => error(
            Code::InvalidArgument,
            "the request asks for nothing (no message_request set)".to_owned(),
        ),
    };
    ServerReflectionResponse {
        valid_host: request.host.clone(),
        original_request: Some(request),
        message_response: Some(response),
    }
}

/// The services to list: the described IDL services exported here, the built-in
/// ones, sorted.
fn services(exporters: &ExporterMap, pool: &DescriptorPool) -> Vec<String> {
    let mut names: Vec<String> = exporters
        .read()
        .services()
        .map(|e| e.interface.to_string())
        .filter(|name| pool.get_service_by_name(name).is_some())
        .chain([health::SERVICE, V1, V1ALPHA].map(str::to_owned))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The file that declares `symbol`: a service, a method (`pkg.Service.Method`), a
/// message, an enum or an extension.
fn file_containing_symbol(pool: &DescriptorPool, symbol: &str) -> Option<FileDescriptor> {
    let symbol = symbol.trim_start_matches('.');
    if let Some(s) = pool.get_service_by_name(symbol) {
        return Some(s.parent_file());
    }
    if let Some(m) = pool.get_message_by_name(symbol) {
        return Some(m.parent_file());
    }
    if let Some(e) = pool.get_enum_by_name(symbol) {
        return Some(e.parent_file());
    }
    if let Some(e) = pool.get_extension_by_name(symbol) {
        return Some(e.parent_file());
    }
    let (parent, member) = symbol.rsplit_once('.')?;
    if let Some(s) = pool.get_service_by_name(parent) {
        return s
            .methods()
            .any(|m| m.name() == member)
            .then(|| s.parent_file());
    }
    // A field of a message, or a value of an enum.
    if let Some(m) = pool.get_message_by_name(parent) {
        return m.get_field_by_name(member).map(|_| m.parent_file());
    }
    None
}

/// A file and its imports, encoded.
fn files(file: FileDescriptor) -> MessageResponse {
    MessageResponse::FileDescriptorResponse(FileDescriptorResponse {
        file_descriptor_proto: with_dependencies(file)
            .iter()
            .map(FileDescriptor::encode_to_vec)
            .collect(),
    })
}

fn error(code: Code, message: String) -> MessageResponse {
    MessageResponse::ErrorResponse(ErrorResponse {
        error_code: code.as_i32(),
        error_message: message,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use prost_reflect::DynamicMessage;
    use rubbo_common::exporters::Exported;
    use rubbo_common::{Invocation, InvokeFuture, Invoker, RpcResult, Url};

    use super::*;

    #[derive(Debug)]
    struct Nothing(Url);

    impl Invoker for Nothing {
        fn invoke(&self, _: Invocation) -> InvokeFuture {
            Box::pin(async { Ok(RpcResult::null()) })
        }
        fn url(&self) -> &Url {
            &self.0
        }
    }

    fn export(map: &ExporterMap, interface: &str) {
        let url = Url::parse(&format!(
            "tri://127.0.0.1:1/{interface}?interface={interface}"
        ))
        .unwrap();
        map.write().insert(
            interface.to_owned(),
            interface,
            Arc::new(Exported::new(Arc::new(Nothing(url)))),
        );
    }

    fn ask(request: MessageRequest, map: &ExporterMap, schemas: &Schemas) -> MessageResponse {
        let req = ServerReflectionRequest {
            host: "h".into(),
            message_request: Some(request),
        };
        let r = answer(&req.encode_to_vec(), map, schemas);
        assert_eq!(r.valid_host, "h");
        assert_eq!(r.original_request, Some(req));
        r.message_response.unwrap()
    }

    #[test]
    fn the_messages_match_the_vendored_schema() {
        // Encoded by the derive here, read back with the schema of the .proto file.
        let pool = Schemas::default().pool();
        for version in ["v1", "v1alpha"] {
            let desc = pool
                .get_message_by_name(&format!(
                    "grpc.reflection.{version}.ServerReflectionResponse"
                ))
                .unwrap();
            let r = ServerReflectionResponse {
                valid_host: "h".into(),
                original_request: Some(ServerReflectionRequest {
                    host: "h".into(),
                    message_request: Some(MessageRequest::FileContainingExtension(
                        ExtensionRequest {
                            containing_type: "a.B".into(),
                            extension_number: 7,
                        },
                    )),
                }),
                message_response: Some(MessageResponse::ErrorResponse(ErrorResponse {
                    error_code: 5,
                    error_message: "m".into(),
                })),
            };
            let d = DynamicMessage::decode(desc, r.encode_to_vec().as_slice()).unwrap();
            let json = serde_json::to_value(&d).unwrap();
            assert_eq!(
                json,
                serde_json::json!({
                    "validHost": "h",
                    "originalRequest": {"host": "h", "fileContainingExtension": {"containingType": "a.B", "extensionNumber": 7}},
                    "errorResponse": {"errorCode": 5, "errorMessage": "m"}
                })
            );
        }
    }

    #[test]
    fn lists_described_exports_and_the_builtin_services_not_wrapper_services() {
        let schemas = Schemas::default();
        let map = ExporterMap::default();
        export(&map, "org.rubbo.Wrapper");
        export(&map, "grpc.health.v1.Health");
        let MessageResponse::ListServicesResponse(list) =
            ask(MessageRequest::ListServices(String::new()), &map, &schemas)
        else {
            panic!("not a list");
        };
        let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [health::SERVICE, V1, V1ALPHA]);
    }

    #[test]
    fn symbols_and_files_are_found_and_unknown_ones_are_not_found() {
        let schemas = Schemas::default();
        let map = ExporterMap::default();
        for symbol in [
            "grpc.health.v1.Health",
            "grpc.health.v1.Health.Watch",
            "grpc.health.v1.HealthCheckResponse",
            "grpc.health.v1.HealthCheckResponse.ServingStatus",
        ] {
            let MessageResponse::FileDescriptorResponse(f) = ask(
                MessageRequest::FileContainingSymbol(symbol.into()),
                &map,
                &schemas,
            ) else {
                panic!("{symbol}: not found");
            };
            assert_eq!(f.file_descriptor_proto.len(), 1, "{symbol}");
            let file = prost_reflect::DescriptorPool::decode_file_descriptor_proto;
            let mut pool = DescriptorPool::new();
            file(&mut pool, f.file_descriptor_proto[0].as_slice()).unwrap();
            assert!(
                pool.get_file_by_name("grpc/health/v1/health.proto")
                    .is_some()
            );
        }
        let by_name = ask(
            MessageRequest::FileByFilename("grpc/reflection/v1alpha/reflection.proto".into()),
            &map,
            &schemas,
        );
        assert!(matches!(
            by_name,
            MessageResponse::FileDescriptorResponse(_)
        ));
        for missing in [
            MessageRequest::FileContainingSymbol("no.Such".into()),
            MessageRequest::FileContainingSymbol("grpc.health.v1.Health.Nope".into()),
            MessageRequest::FileByFilename("nope.proto".into()),
            MessageRequest::AllExtensionNumbersOfType("no.Such".into()),
            MessageRequest::FileContainingExtension(ExtensionRequest {
                containing_type: "grpc.health.v1.HealthCheckRequest".into(),
                extension_number: 100,
            }),
        ] {
            let MessageResponse::ErrorResponse(e) = ask(missing.clone(), &map, &schemas) else {
                panic!("{missing:?}: found");
            };
            assert_eq!(e.error_code, Code::NotFound.as_i32(), "{missing:?}");
        }
    }

    #[test]
    fn a_malformed_request_gets_invalid_argument() {
        let schemas = Schemas::default();
        let map = ExporterMap::default();
        let r = answer(b"\xff\xff\xff", &map, &schemas);
        let Some(MessageResponse::ErrorResponse(e)) = r.message_response else {
            panic!("no error");
        };
        assert_eq!(e.error_code, Code::InvalidArgument.as_i32());
        let empty = answer(b"", &map, &schemas);
        assert!(matches!(
            empty.message_response,
            Some(MessageResponse::ErrorResponse(ErrorResponse {
                error_code: 3,
                ..
            }))
        ));
    }
}
