#[rubbo::service(interface = "x.S")]
pub trait S {
    async fn echo(&mut self, s: String) -> Result<String, rubbo::RpcError>;
}

fn main() {}
