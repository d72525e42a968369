#[rubbo::service(interface = "x.S")]
pub trait S {
    async fn echo(s: String) -> Result<String, rubbo::RpcError>;
}

fn main() {}
