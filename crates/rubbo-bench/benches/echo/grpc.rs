//! Baseline (b): a tonic unary echo, gRPC over HTTP/2 on one channel (one connection),
//! tonic's default settings apart from `TCP_NODELAY` on both sides.

use std::net::SocketAddr;

use anyhow::{Context, ensure};
use tokio::sync::oneshot;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

mod pb {
    tonic::include_proto!("rubbo.bench.echo");
}

use pb::echo_client::EchoClient as GrpcClient;
use pb::echo_server::{Echo, EchoServer};
use pb::{EchoReply, EchoRequest};

use crate::load::EchoClient;

#[derive(Debug)]
struct EchoService;

#[tonic::async_trait]
impl Echo for EchoService {
    async fn echo(&self, request: Request<EchoRequest>) -> Result<Response<EchoReply>, Status> {
        Ok(Response::new(EchoReply {
            message: request.into_inner().message,
        }))
    }
}

/// The tonic server; shut down on drop.
#[derive(Debug)]
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

pub(crate) fn serve() -> anyhow::Result<Server> {
    let incoming = TcpIncoming::bind(([127, 0, 0, 1], 0).into())?.with_nodelay(Some(true));
    let addr = incoming.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(EchoServer::new(EchoService))
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stopped.await;
            }),
    );
    Ok(Server { addr, _stop: stop })
}

/// A tonic client on one channel; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Client {
    inner: GrpcClient<Channel>,
    payload: String,
}

impl Client {
    pub(crate) async fn connect(addr: SocketAddr, payload: String) -> anyhow::Result<Self> {
        let channel = Endpoint::from_shared(format!("http://{addr}"))?
            .tcp_nodelay(true)
            .connect()
            .await
            .context("connecting the tonic channel")?;
        Ok(Client {
            inner: GrpcClient::new(channel),
            payload,
        })
    }
}

impl EchoClient for Client {
    async fn echo(&self) -> anyhow::Result<()> {
        let reply = self
            .inner
            .clone()
            .echo(EchoRequest {
                message: self.payload.clone(),
            })
            .await?;
        ensure!(
            reply.get_ref().message == self.payload,
            "tonic echo returned another string"
        );
        Ok(())
    }
}
