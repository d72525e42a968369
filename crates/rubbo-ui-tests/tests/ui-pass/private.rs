//! Services that are not public, in a crate denying unused code and unreachable `pub`
//! items: the generated items trigger neither.
#![deny(missing_docs, missing_debug_implementations, unreachable_pub, unused)]

mod inner {
    use std::sync::Arc;

    #[rubbo::service(interface = "x.P")]
    pub(crate) trait P {
        async fn get(&self) -> Result<i32, rubbo::RpcError>;
    }

    #[rubbo::service(interface = "x.Q")]
    trait Q {
        async fn get(&self) -> Result<i32, rubbo::RpcError>;
    }

    pub(crate) struct Impl;

    impl P for Impl {
        async fn get(&self) -> Result<i32, rubbo::RpcError> {
            Ok(1)
        }
    }

    impl Q for Impl {
        async fn get(&self) -> Result<i32, rubbo::RpcError> {
            Ok(2)
        }
    }

    pub(crate) fn q_client() -> rubbo::BoxInvoker {
        let url = rubbo::Url::new("local", "127.0.0.1", 0);
        let invoker = QServer::new(Arc::new(Impl)).into_invoker(url);
        QClient::new(invoker.clone()).invoker().clone()
    }
}

fn main() {
    let url = rubbo::Url::new("local", "127.0.0.1", 0);
    let server = inner::PServer::new(std::sync::Arc::new(inner::Impl));
    let _client = inner::PClient::new(server.into_invoker(url));
    let _ = inner::q_client();
}
