#[rubbo::service(interface = "x.S", verison = "1.0.0")]
pub trait S {
    async fn echo(&self, v: i32) -> Result<i32, rubbo::RpcError>;
}

#[rubbo::service(version = "1.0.0")]
pub trait T {
    async fn echo(&self, v: i32) -> Result<i32, rubbo::RpcError>;
}

fn main() {}
